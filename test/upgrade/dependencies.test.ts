import {
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  readlinkSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import {
  canReuseDependencies,
  lockedDependencies,
  reuseDependencies,
} from "../../src/upgrade/dependencies.js";

/** Whether a release can reuse the running release's node_modules (the same lock file), and how it gets them. */

let dir: string;
let running: string;
let next: string;

const lock = (version: string, diffVersion = "8.0.4") =>
  `${JSON.stringify(
    {
      name: "magpie",
      version,
      lockfileVersion: 3,
      requires: true,
      packages: {
        "": { name: "magpie", version, dependencies: { diff: "^8.0.4" } },
        "node_modules/diff": {
          version: diffVersion,
          resolved: `https://registry.npmjs.org/diff/-/diff-${diffVersion}.tgz`,
        },
      },
    },
    null,
    2,
  )}\n`;

beforeEach(() => {
  dir = mkdtempSync(path.join(tmpdir(), "magpie-dependencies-"));
  running = path.join(dir, "running");
  next = path.join(dir, "next");
  mkdirSync(path.join(running, "node_modules", "diff", "lib"), { recursive: true });
  mkdirSync(path.join(running, "node_modules", ".bin"), { recursive: true });
  writeFileSync(path.join(running, "node_modules", "diff", "lib", "index.js"), "module.exports = 1;\n");
  symlinkSync("../diff/lib/index.js", path.join(running, "node_modules", ".bin", "diff"));
  mkdirSync(path.join(next, ".git", "info"), { recursive: true });
  writeFileSync(path.join(running, "package-lock.json"), lock("0.1.0"));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

describe("reusing the installed dependencies", () => {
  it("the same tree with only the release's own version bumped is reusable; another tree, or no lock, is not", () => {
    writeFileSync(path.join(next, "package-lock.json"), lock("0.2.0"));
    expect(lockedDependencies(next)).toBe(lockedDependencies(running));
    expect(canReuseDependencies(running, next)).toBe(true);

    writeFileSync(path.join(next, "package-lock.json"), lock("0.2.0", "8.0.5"));
    expect(canReuseDependencies(running, next)).toBe(false);
    rmSync(path.join(next, "package-lock.json"));
    expect(canReuseDependencies(running, next)).toBe(false);
    writeFileSync(path.join(next, "package-lock.json"), "{ not json");
    expect(canReuseDependencies(running, next)).toBe(false);
  });

  it("nothing installed to reuse: no", () => {
    writeFileSync(path.join(next, "package-lock.json"), lock("0.2.0"));
    rmSync(path.join(running, "node_modules"), { recursive: true });
    expect(canReuseDependencies(running, next)).toBe(false);
  });

  it("a node_modules directory is hard-linked (same files, no second copy), its links kept as links", async () => {
    expect(await reuseDependencies(running, next)).toBe("hard-linked");
    const file = (root: string) => path.join(root, "node_modules", "diff", "lib", "index.js");
    expect(statSync(file(next)).ino).toBe(statSync(file(running)).ino);
    expect(readlinkSync(path.join(next, "node_modules", ".bin", "diff"))).toBe("../diff/lib/index.js");
    // Deleting the old release later leaves the new one's files in place.
    rmSync(running, { recursive: true });
    expect(readFileSync(file(next), "utf8")).toBe("module.exports = 1;\n");
  });

  it("a node_modules that is a link is linked to the same place and kept out of git's view", async () => {
    const shared = path.join(dir, "shared-node-modules");
    mkdirSync(shared);
    rmSync(path.join(running, "node_modules"), { recursive: true });
    symlinkSync(shared, path.join(running, "node_modules"));
    expect(await reuseDependencies(running, next)).toBe("linked");
    expect(lstatSync(path.join(next, "node_modules")).isSymbolicLink()).toBe(true);
    expect(readlinkSync(path.join(next, "node_modules"))).toBe(shared);
    expect(readFileSync(path.join(next, ".git", "info", "exclude"), "utf8")).toContain("/node_modules\n");
  });
});
