import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readlinkSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { execa } from "execa";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { adoptInstall, findInstall, pointInstallAt } from "../../src/upgrade/install.js";
import { resolveTarget } from "../../src/upgrade/release.js";
import { UpgradeError } from "../../src/upgrade/upgrade-error.js";

/** Finding the install (a clean git checkout only), choosing the release to install, and switching the link. */

let dir: string;
let upstream: string;
let checkout: string;

const git = (cwd: string, ...args: string[]) => execa("git", args, { cwd });

async function commit(message: string, tag?: string): Promise<string> {
  writeFileSync(path.join(upstream, "notes.txt"), message);
  await git(upstream, "add", "-A");
  await git(upstream, "commit", "-q", "-m", message);
  if (tag) await git(upstream, "tag", tag);
  return (await git(upstream, "rev-parse", "HEAD")).stdout.trim();
}

async function refusal(promise: Promise<unknown>): Promise<UpgradeError> {
  const error = await promise.catch((caught: unknown) => caught);
  expect(error).toBeInstanceOf(UpgradeError);
  return error as UpgradeError;
}

beforeEach(async () => {
  dir = mkdtempSync(path.join(tmpdir(), "magpie-install-"));
  upstream = path.join(dir, "upstream");
  mkdirSync(upstream);
  await git(upstream, "init", "-q", "-b", "main");
  await git(upstream, "config", "user.email", "t@example.com");
  await git(upstream, "config", "user.name", "T");
  writeFileSync(path.join(upstream, "package.json"), '{"name": "magpie", "version": "0.1.0"}\n');
  writeFileSync(path.join(upstream, ".gitignore"), "dist/\n");
  await commit("first", "v0.1.0");
  checkout = path.join(dir, "opt", "magpie");
  await execa("git", ["clone", "-q", upstream, checkout]);
  mkdirSync(path.join(checkout, "dist", "bundle"), { recursive: true });
  writeFileSync(path.join(checkout, "dist", "bundle", "main.js"), "");
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

const main = () => path.join(checkout, "dist", "bundle", "main.js");

describe("findInstall", () => {
  it("a clean checkout: its revision, version and the releases directory beside it", async () => {
    const install = await findInstall(main());
    expect(install).toMatchObject({
      link: checkout,
      checkout,
      releasesDir: `${checkout}-releases`,
      version: "0.1.0",
    });
    expect(install.revision).toMatch(/^[0-9a-f]{40}$/);
  });

  it("refuses a checkout with local changes (listing them), a directory that isn't a checkout, and another entry point", async () => {
    writeFileSync(path.join(checkout, "notes.txt"), "edited");
    writeFileSync(path.join(checkout, "stray.txt"), "new");
    const changed = await refusal(findInstall(main()));
    expect(changed.code).toBe("upgrade.local_changes");
    expect(changed.message).toMatch(/M notes\.txt[\s\S]*\?\? stray\.txt[\s\S]*Commit them/);

    rmSync(path.join(checkout, ".git"), { recursive: true });
    const plain = await refusal(findInstall(main()));
    expect(plain.code).toBe("upgrade.not_git");
    expect(plain.message).toContain("docker compose up -d");

    const other = await refusal(findInstall("/usr/local/bin/magpie"));
    expect(other.code).toBe("upgrade.unknown_install");
  });
});

describe("resolveTarget", () => {
  it("defaults to the newest version tag (by version, not by name), fetched from origin", async () => {
    await commit("nine", "v0.9.0");
    const ten = await commit("ten", "v0.10.0");
    await commit("unreleased");
    const install = await findInstall(main());
    expect(await resolveTarget(install, undefined)).toEqual({ ref: "v0.10.0", revision: ten });
  });

  it("without tags, origin's default branch; a version without v, a branch, a commit; an unknown ref is refused", async () => {
    await git(upstream, "tag", "-d", "v0.1.0");
    await git(checkout, "tag", "-d", "v0.1.0");
    const head = await commit("second");
    const install = await findInstall(main());
    expect(await resolveTarget(install, undefined)).toEqual({ ref: "origin/HEAD", revision: head });
    const tagged = await commit("third", "v0.3.0");
    expect(await resolveTarget(install, "0.3.0")).toEqual({ ref: "0.3.0", revision: tagged });
    expect(await resolveTarget(install, "main")).toEqual({ ref: "main", revision: tagged });
    expect(await resolveTarget(install, head.slice(0, 10))).toEqual({
      ref: head.slice(0, 10),
      revision: head,
    });
    expect((await refusal(resolveTarget(install, "nope"))).code).toBe("upgrade.unknown_ref");
  });

  it("refuses a ref that git would read as an option", async () => {
    const install = await findInstall(main());
    const marker = path.join(dir, "pwned");
    const error = await refusal(resolveTarget(install, `--output=${marker}`));
    expect(error.code).toBe("upgrade.bad_ref");
    expect(existsSync(marker)).toBe(false);
  });
});

describe("the install link", () => {
  it("adopting moves the checkout into the releases directory behind a link; switching renames a new link over it", async () => {
    const install = await findInstall(main());
    const moved = adoptInstall(install);
    expect(moved).toBe(path.join(`${checkout}-releases`, install.revision.slice(0, 12)));
    expect(readlinkSync(checkout)).toBe(moved);
    expect(existsSync(path.join(checkout, "dist", "bundle", "main.js"))).toBe(true);
    // Adopted once: a second call changes nothing.
    expect(adoptInstall(await findInstall(main()))).toBe(moved);

    const other = path.join(`${checkout}-releases`, "0123456789ab");
    mkdirSync(other);
    pointInstallAt(checkout, other);
    expect(readlinkSync(checkout)).toBe(other);
    pointInstallAt(checkout, moved);
    expect(readlinkSync(checkout)).toBe(moved);
    expect(readdirSync(path.dirname(checkout)).sort()).toEqual(["magpie", "magpie-releases"]);
    expect((await findInstall(main())).releasesDir).toBe(`${checkout}-releases`);
  });
});
