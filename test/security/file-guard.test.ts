import { describe, expect, it } from "vitest";
import { FILE_GUARD_RULES, judgeDeletions, judgePath, strictest } from "../../src/security/file-guard.js";
import type { ResolvedPath } from "../../src/security/path-resolver.js";
import { addressProblem } from "../../src/security/ssrf-address.js";

const HOME = "/home/pi";
const WORKSPACE = "/home/pi/magpie/workspace";
const SCOPE = { home: HOME, state: { protected: [], exceptions: [] } };

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
  judgePath(at(path, lexical), access, "medium", SCOPE)
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

  it("matches the system read list at every level, so /etc/passwd is refused", () => {
    for (const path of [
      "/proc/1/environ",
      "/sys/class/gpio/export",
      "/dev/mem",
      "/etc/passwd",
      "/etc/hosts",
      "/boot/config.txt",
      "/bin/sh",
      "/sbin/init",
      "/usr/bin/env",
      "/usr/sbin/sshd",
      "/usr/lib/os-release",
      "/usr/libexec/sudo/sudoers.so",
      "/private/etc/master.passwd",
      "/private/var/db/dslocal",
    ]) {
      expect(rules(path, "read"), path).toContain("file.system_path_read");
      for (const level of ["low", "medium", "high"] as const)
        expect(strictest(judgePath(at(path), "read", level, SCOPE))?.verdict, `${path} ${level}`).toBe(
          "deny",
        );
    }
    expect(rules("/etcetera/file", "read")).toEqual(["file.outside_workspace_read"]);
    expect(rules("/usr/share/doc/x", "read")).toEqual(["file.outside_workspace_read"]);
  });

  it("matches system paths for writes", () => {
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

  it("matches the whole sensitive write list at every level: start-up files, their directories, crontabs", () => {
    const paths = [
      ...[".bashrc", ".bash_profile", ".bash_login", ".bash_logout", ".profile"].map((f) => `${HOME}/${f}`),
      ...[".zshrc", ".zprofile", ".zshenv", ".zlogin", ".gitconfig"].map((f) => `${HOME}/${f}`),
      `${HOME}/.config/git/config`,
      `${HOME}/.config/git/attributes`,
      `${HOME}/.config/fish/config.fish`,
      `${HOME}/.config/systemd/user/evil.service`,
      `${HOME}/.config/autostart/evil.desktop`,
      `${HOME}/.local/share/systemd/user/evil.timer`,
      `${HOME}/.ssh/authorized_keys`,
      `${HOME}/.ssh/config`,
      `${HOME}/.gnupg/gpg.conf`,
      `${HOME}/.aws/config`,
      `${HOME}/.config/gcloud/credentials.db`,
      `${HOME}/.netrc`,
      `${WORKSPACE}/.env`,
      "/var/spool/cron/crontabs/pi",
      "/var/spool/cron/root",
      "/etc/crontab",
      "/etc/cron.d/evil",
      "/etc/cron.hourly/evil",
      "/etc/shadow",
    ];
    for (const path of paths) {
      expect(rules(path, "write"), path).toContain("file.sensitive_path_write");
      for (const level of ["low", "medium", "high"] as const)
        expect(strictest(judgePath(at(path), "write", level, SCOPE))?.verdict, `${path} ${level}`).toBe(
          "deny",
        );
    }
  });

  it("start-up files count only in the home directory; .git internals only for writes", () => {
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
    expect(strictest(judgePath(outside, "read", "low", SCOPE))?.verdict).toBe("deny");
    expect(strictest(judgePath(outside, "read", "medium", SCOPE))?.verdict).toBe("warn");
    expect(strictest(judgePath(outside, "read", "high", SCOPE))?.verdict).toBe("allow");
    const key = at(`${HOME}/.ssh/id_rsa`);
    expect(strictest(judgePath(key, "read", "high", SCOPE))?.rule.id).toBe("file.sensitive_path_read");
    expect(judgeDeletions(4, "low")).toBeNull();
    expect(judgeDeletions(5, "medium")?.verdict).toBe("warn");
    expect(Object.keys(FILE_GUARD_RULES)).toHaveLength(9);
  });
});

describe("file.magpie_state", () => {
  const state = {
    protected: ["/opt/magpie", "/opt/magpie/config/magpie.yaml", "/srv/magpie-data", `${WORKSPACE}/.env`],
    exceptions: ["/srv/magpie-data/workspace"],
  };
  const scope = { home: HOME, state };

  it("is Deny at every level for reads and writes, inside the workspace too", () => {
    for (const path of [
      "/opt/magpie/config/magpie.yaml",
      "/opt/magpie/dist/index.js",
      "/srv/magpie-data/magpie.db",
      "/srv/magpie-data/spill/spill-0123456789abcdef.txt",
      "/srv/magpie-data",
      `${WORKSPACE}/.env`,
    ]) {
      for (const access of ["read", "write"] as const) {
        for (const level of ["low", "medium", "high"] as const) {
          const worst = strictest(judgePath(at(path), access, level, scope));
          expect(worst?.rule.id, `${path} ${access} ${level}`).toBe("file.magpie_state");
          expect(worst?.verdict).toBe("deny");
          expect(worst?.rule.suggestion).toBe("ask the owner to change the configuration by hand");
        }
      }
    }
  });

  it("leaves the workspace inside dataDir reachable, and judges the lexical and hard-link names too", () => {
    const inWorkspace = { ...at("/srv/magpie-data/workspace/notes.md"), insideWorkspace: true };
    expect(judgePath(inWorkspace, "read", "low", scope)).toEqual([]);
    expect(
      strictest(judgePath(at(`${WORKSPACE}/notes.md`, "/opt/magpie/.env"), "read", "high", scope))?.rule.id,
    ).toBe("file.magpie_state");
    const hardLink = { ...at(`${WORKSPACE}/innocent.txt`), hardLinked: true, insideWorkspace: false };
    const aliased = { ...hardLink, sameFileAs: ["/opt/magpie/config/magpie.yaml"] };
    expect(strictest(judgePath(hardLink, "read", "high", scope))?.verdict).toBe("allow");
    const finding = strictest(judgePath(aliased, "read", "high", scope))!;
    expect(finding).toMatchObject({ verdict: "deny", rule: { id: "file.magpie_state" } });
    expect(finding.path).toContain("a hard link of /opt/magpie/config/magpie.yaml");
    const credentials = { ...hardLink, sameFileAs: [`${HOME}/.aws/credentials`] };
    expect(strictest(judgePath(credentials, "read", "medium", scope))?.rule.id).toBe(
      "file.sensitive_path_read",
    );
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
