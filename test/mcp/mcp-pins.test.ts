import { describe, expect, it } from "vitest";
import { parseConfig } from "../../src/config/load.js";
import { unpinnedPackage } from "../../src/config/package-pin.js";
import { ConfigError } from "../../src/lib/errors.js";

const FS = "@modelcontextprotocol/server-filesystem";

/** The config problems of one stdio server, or [] when it loads. */
function problemsOf(command: string, args: string[]): string[] {
  try {
    parseConfig({ mcpServers: { files: { command, args } } }, { env: {}, cwd: "/tmp" });
    return [];
  } catch (error) {
    if (error instanceof ConfigError) return error.problems;
    throw error;
  }
}

describe("MCP stdio servers started through a package launcher must pin an exact version", () => {
  it("refuses an unpinned npx at config load, naming the key path and the fix", () => {
    const problems = problemsOf("npx", ["-y", FS, "/srv/share"]);
    expect(problems).toHaveLength(1);
    expect(problems[0]).toContain("mcpServers.files.args");
    expect(problems[0]).toContain(`pin an exact version, e.g. ${FS}@2025.8.21`);
    expect(problemsOf("npx", ["-y", `${FS}@2025.8.21`, "/srv/share"])).toEqual([]);
  });

  // Each of these runs whatever the registry serves at the next start; each fails without the check.
  const refused: Array<[string, string, string[]]> = [
    ["no version", "npx", [FS]],
    ["a caret range", "npx", [`${FS}@^2025.8.0`]],
    ["a tilde range", "npx", ["mcp-server@~1.2.3"]],
    ["latest", "npx", [`${FS}@latest`]],
    ["a tag", "npx", [`${FS}@next`]],
    ["1.x", "npx", ["mcp-server@1.x"]],
    ["major only", "npx", ["mcp-server@1"]],
    ["major.minor", "npx", ["mcp-server@1.2"]],
    ["a star", "npx", ["mcp-server@*"]],
    ["a comparator", "npx", ["mcp-server@>=1.2.3"]],
    ["flags before the package", "npx", ["--yes", "--quiet", FS]],
    ["-p with a range, then a command", "npx", ["-p", "mcp-server@1", "mcp-server"]],
    ["--package= with no version", "npx", ["--package=mcp-server", "mcp-server"]],
    ["a second -p unpinned", "npx", ["-p", "a@1.0.0", "-p", "b", "b"]],
    ["-c shell string", "npx", ["-c", "mcp-server"]],
    ["an unknown option that may eat the pinned word", "npx", ["--foo", "decoy@1.0.0", "evil"]],
    ["a full path to npx", "/usr/bin/npx", ["-y", FS]],
    ["npx.cmd", "npx.cmd", [FS]],
    ["-- then the package", "npx", ["--", FS]],
    ["a git spec", "npx", ["github:someone/mcp-server"]],
    ["a git spec with a version-looking tail", "npx", ["git+https://example.com/x.git#v1.0.0@1.0.0"]],
    ["an alias to a range", "npx", ["x@npm:mcp-server@^1.0.0"]],
    ["npm exec", "npm", ["exec", "--yes", "--", FS]],
    ["npm exec --package", "npm", ["exec", "--package=mcp-server@latest", "--", "mcp-server"]],
    ["npm x", "npm", ["x", FS]],
    ["pnpm dlx", "pnpm", ["dlx", FS]],
    ["pnpm --package dlx", "pnpm", ["--package=mcp-server", "dlx", "mcp-server"]],
    ["pnpx", "pnpx", [FS]],
    ["yarn dlx", "yarn", ["dlx", "-p", "mcp-server", "mcp-server"]],
    ["bunx", "bunx", [FS]],
    ["bunx --bun", "bunx", ["--bun", `${FS}@latest`]],
    ["bun x", "bun", ["x", FS]],
    ["uvx no version", "uvx", ["mcp-server-fetch"]],
    ["uvx @latest", "uvx", ["mcp-server-fetch@latest"]],
    ["uvx a range", "uvx", ["mcp-server-fetch>=1.0"]],
    ["uvx a wildcard", "uvx", ["mcp-server-fetch==1.*"]],
    ["uvx two clauses", "uvx", ["mcp-server-fetch==1.0,<2"]],
    ["uvx --from unpinned", "uvx", ["--from", "mcp-server-fetch", "mcp-server-fetch"]],
    ["uvx --from a range", "uvx", ["--from", "mcp-server-fetch>0.2,<0.3", "mcp-server-fetch"]],
    ["uvx --with unpinned", "uvx", ["--with", "httpx", "mcp-server-fetch==2025.4.7"]],
    ["uvx --with-requirements", "uvx", ["--with-requirements", "req.txt", "mcp-server-fetch==2025.4.7"]],
    ["uvx an unknown option", "uvx", ["--refresh-package", "decoy==1.0", "evil"]],
    ["uv tool run", "uv", ["tool", "run", "mcp-server-fetch"]],
    ["pipx run", "pipx", ["run", "mcp-server-fetch"]],
    ["env wrapper", "env", ["NODE_ENV=production", "npx", FS]],
    ["env -u NAME wrapper", "env", ["-u", "HOME", "npx", FS]],
    ["env -S split string", "env", ["-S", `npx -y ${FS}`]],
    ["nice / timeout wrappers", "nice", ["-n", "10", "timeout", "60", "npx", FS]],
    ["sudo wrapper", "/usr/bin/sudo", ["-u", "mcp", "uvx", "mcp-server-fetch"]],
    ["a second launcher in a shell line", "sh", ["-c", `npx ${FS}@2025.8.21 && npx evil`]],
    ["a shell -c line", "sh", ["-c", `npx -y ${FS} /srv`]],
    ["bash -lc", "bash", ["-lc", `exec npx ${FS}`]],
  ];
  it.each(refused)("refuses %s", (_label, command, args) => {
    const problem = unpinnedPackage(command, args);
    expect(problem).toMatch(/pin an exact version|can't|no package|not one Magpie/);
    expect(problemsOf(command, args)[0]).toContain("mcpServers.files.args");
  });

  const accepted: Array<[string, string, string[]]> = [
    ["an exact version", "npx", ["-y", `${FS}@2025.8.21`, "/srv/share"]],
    ["a prerelease", "npx", ["mcp-server@1.2.3-beta.1"]],
    ["a v prefix", "npx", ["mcp-server@v1.2.3"]],
    ["a full path to npx", "/usr/local/bin/npx", ["--yes", `${FS}@2025.8.21`]],
    ["-p exact, then a command", "npx", ["-p", "mcp-server@1.0.0", "mcp-server", "--port", "1"]],
    ["an option written with =", "npx", ["--registry=https://registry.example", "mcp-server@1.0.0"]],
    ["a local folder", "npx", ["./servers/mine"]],
    ["npm exec", "npm", ["exec", "--yes", "--package=mcp-server@1.0.0", "--", "mcp-server"]],
    ["pnpm dlx", "pnpm", ["dlx", "mcp-server@1.0.0"]],
    ["yarn dlx", "yarn", ["dlx", "-p", "mcp-server@1.0.0", "mcp-server"]],
    ["bunx", "bunx", ["--bun", "mcp-server@1.0.0"]],
    ["uvx name@version", "uvx", ["mcp-server-fetch@2025.4.7"]],
    ["uvx name==version", "uvx", ["mcp-server-fetch==2025.4.7"]],
    ["uvx with extras", "uvx", ["mcp-server-fetch[all]==2025.4.7"]],
    ["uvx --from exact", "uvx", ["--from", "mcp-server-fetch==2025.4.7", "mcp-server-fetch"]],
    ["uvx --with exact", "uvx", ["--with", "httpx==0.28.1", "mcp-server-fetch==2025.4.7"]],
    ["uvx --python then the package", "uvx", ["--python", "3.12", "mcp-server-fetch==2025.4.7"]],
    ["uv tool run", "uv", ["tool", "run", "mcp-server-fetch@2025.4.7"]],
    ["a program that is no launcher", "node", ["server.js"]],
    ["npm run (not a fetch)", "npm", ["run", "mcp"]],
    ["env wrapper, pinned", "env", ["-u", "HOME", "npx", `${FS}@2025.8.21`]],
    ["a shell line, pinned", "sh", ["-c", `cd /srv && exec npx -y ${FS}@2025.8.21 /srv`]],
  ];
  it.each(accepted)("accepts %s", (_label, command, args) => {
    expect(unpinnedPackage(command, args)).toBeNull();
    expect(problemsOf(command, args)).toEqual([]);
  });

  it("reads a hostile 1 MB argument in linear time", () => {
    const big = "a".repeat(1_000_000);
    const started = performance.now();
    expect(unpinnedPackage("npx", [`${big}@${big}`])).toContain("a range or tag");
    expect(unpinnedPackage("uvx", [`${big}==${"1".repeat(1_000_000)}*`])).toContain("a range or tag");
    expect(unpinnedPackage("sh", ["-c", `npx ${" ".repeat(1_000_000)}x`])).toContain("without a version");
    expect(performance.now() - started).toBeLessThan(2_000);
  });
});
