import { describe, expect, it } from "vitest";
import { FILE_GUARD_RULES, judgeDeletions, judgePath, strictest } from "../../src/security/file-guard.js";
import type { ResolvedPath } from "../../src/security/path-resolver.js";
import { addressProblem } from "../../src/security/ssrf-address.js";

const HOME = "/home/pi";
const WORKSPACE = "/home/pi/magpie/workspace";

function at(real: string, lexical = real): ResolvedPath {
  const inside = real.startsWith(`${WORKSPACE}/`) || real === WORKSPACE;
  return {
    requested: lexical,
    lexical,
    real,
    exists: true,
    isDirectory: false,
    hardLinked: false,
    insideWorkspace: inside,
  };
}
const rules = (path: string, access: "read" | "write", lexical?: string) =>
  judgePath(at(path, lexical), access, "medium", HOME)
    .map((finding) => finding.rule.id)
    .sort();

describe("file guard path lists", () => {
  it("matches the sensitive read list (exact, home prefixes, basenames)", () => {
    for (const path of [
      "/etc/shadow",
      "/etc/gshadow",
      "/etc/sudoers",
      `${HOME}/.ssh/id_rsa`,
      `${HOME}/.gnupg/pubring.kbx`,
      `${HOME}/.aws/credentials`,
      `${HOME}/.config/gcloud/creds.json`,
    ]) {
      expect(rules(path, "read"), path).toContain("file.sensitive_path_read");
    }
    expect(rules(`${WORKSPACE}/.env`, "read")).toEqual(["file.sensitive_path_read"]);
    expect(rules(`${WORKSPACE}/sub/.netrc`, "read")).toEqual(["file.sensitive_path_read"]);
    expect(rules(`${WORKSPACE}/.env.example`, "read")).toEqual([]);
    expect(rules(`${HOME}/.sshd_notes`, "read")).toEqual(["file.outside_workspace_read"]);
  });

  it("matches system paths for reads and writes", () => {
    expect(rules("/proc/1/environ", "read")).toContain("file.system_path_read");
    expect(rules("/dev/mem", "read")).toContain("file.system_path_read");
    expect(rules("/etc/hosts", "read")).toEqual(["file.outside_workspace_read"]);
    for (const path of [
      "/etc/hosts",
      "/usr/local/bin/x",
      "/boot/config.txt",
      "/bin/sh",
      "/sbin/init",
      "/lib/x.so",
      "/sys/class/gpio/export",
    ]) {
      expect(rules(path, "write"), path).toContain("file.system_path_write");
    }
    expect(rules("/etcetera/file", "write")).toEqual(["file.outside_workspace_write"]);
  });

  it("matches shell start-up files (exact) and .git internals for writes only", () => {
    for (const file of [".bashrc", ".bash_profile", ".profile", ".zshrc", ".zprofile"]) {
      expect(rules(`${HOME}/${file}`, "write"), file).toContain("file.sensitive_path_write");
    }
    expect(rules(`${WORKSPACE}/.bashrc`, "write")).toEqual([]);
    expect(rules(`${WORKSPACE}/repo/.git/config`, "write")).toEqual(["file.protected_file_overwrite"]);
    expect(rules(`${WORKSPACE}/repo/.git/config`, "read")).toEqual([]);
    expect(rules(`${WORKSPACE}/.github/workflows/ci.yml`, "write")).toEqual([]);
    expect(rules(`${WORKSPACE}/.gitignore`, "write")).toEqual([]);
  });

  it("judges the lexical path too: a link named like a sensitive file stays sensitive", () => {
    expect(rules(`${WORKSPACE}/harmless.txt`, "read", `${HOME}/.ssh/id_rsa`)).toContain(
      "file.sensitive_path_read",
    );
  });

  it("applies the level columns and picks the strictest verdict", () => {
    const outside = at("/srv/data/file.txt");
    expect(strictest(judgePath(outside, "read", "low", HOME))?.verdict).toBe("deny");
    expect(strictest(judgePath(outside, "read", "medium", HOME))?.verdict).toBe("warn");
    expect(strictest(judgePath(outside, "read", "high", HOME))?.verdict).toBe("allow");
    const key = at(`${HOME}/.ssh/id_rsa`);
    expect(strictest(judgePath(key, "read", "high", HOME))?.rule.id).toBe("file.sensitive_path_read");
    expect(judgeDeletions(4, "low")).toBeNull();
    expect(judgeDeletions(5, "medium")?.verdict).toBe("warn");
    expect(Object.keys(FILE_GUARD_RULES)).toHaveLength(8);
  });
});

describe("address classification", () => {
  it("passes only public unicast addresses", () => {
    expect(addressProblem("93.184.216.34")).toBeNull();
    expect(addressProblem("2606:2800:220:1:248:1893:25c8:1946")).toBeNull();
    const refused: Record<string, string> = {
      "127.0.0.1": "loopback",
      "10.1.2.3": "private",
      "172.31.255.255": "private",
      "192.168.0.1": "private",
      "169.254.169.254": "linkLocal",
      "100.64.0.1": "carrierGradeNat",
      "0.0.0.0": "unspecified",
      "224.0.0.251": "multicast",
      "255.255.255.255": "broadcast",
      "::1": "loopback",
      "::": "unspecified",
      "fe80::1": "linkLocal",
      "fd00::1": "uniqueLocal",
      "::ffff:8.8.8.8": "ipv4Mapped",
      "ff02::1": "multicast",
    };
    for (const [address, range] of Object.entries(refused))
      expect(addressProblem(address), address).toBe(range);
    expect(addressProblem("not-an-ip")).toBe("not an IP address");
  });
});
