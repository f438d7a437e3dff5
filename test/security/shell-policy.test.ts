import { describe, expect, it } from "vitest";
import { parseConfig } from "../../src/config/load.js";
import { GuardRefusal } from "../../src/security/guard-refusal.js";
import { checkShellPolicy } from "../../src/security/shell-policy.js";
import { LINEAR_BOUND_MS } from "../helpers/hostile-inputs.js";

const policy = { allowCommands: ["echo", "ls"], denyPatterns: [] };

/** The refusal message, or "allowed". */
async function verdict(command: string, allowCommands = policy.allowCommands): Promise<string> {
  try {
    await checkShellPolicy(command, { allowCommands, denyPatterns: [] });
    return "allowed";
  } catch (error) {
    if (!(error instanceof GuardRefusal)) throw error;
    expect(error.code).toBe("shell.denied");
    return error.message;
  }
}

describe("allowCommands on the parsed command", () => {
  // The old regex splitter ran `2>./ls touch X`, `./ls`, `bin/ls`, `PATH=. ls`, `PATH=.; ls` and
  // `LD_PRELOAD=./x.so ls`; it refused the rest by accident (`{`, `for`, `f()` taken for programs), and
  // refused allowed lines such as `for f in a b; do echo $f; done` and `(ls) && { echo; }` below.
  it.each([
    ["2>./ls touch X", "'touch' not listed"],
    [">ls touch X", "'touch' not listed"],
    ["echo $(touch X)", "'touch' not listed"],
    ['echo "$(touch X)"', "'touch' not listed"],
    ["echo `touch X`", "'touch' not listed"],
    ['echo "a `touch X` b"', "'touch' not listed"],
    ["cat <(touch X)", "'touch', 'cat' not listed"],
    ["echo >(touch X)", "'touch' not listed"],
    ["echo a; touch X", "'touch' not listed"],
    ["echo a && touch X", "'touch' not listed"],
    ["echo a || touch X", "'touch' not listed"],
    ["echo a & touch X", "'touch' not listed"],
    ["echo a | sh", "'sh' not listed"],
    ["echo a\ntouch X", "'touch' not listed"],
    ["env X=1 touch X", "'env', 'touch' not listed"],
    ["X=1 touch X", "'touch' not listed"],
    ["/usr/bin/touch X", "'touch' not listed"],
    ["./ls", "'./ls' is a path relative to the working directory"],
    ["bin/ls", "'bin/ls' is a path relative"],
    ["(touch X)", "'touch' not listed"],
    ["{ touch X; }", "'touch' not listed"],
    ["f() { touch X; }; f", "'touch', 'f' not listed"],
    ["eval touch X", "'eval' runs a string as shell code"],
    ["source ./x.sh", "'source' runs a string as shell code"],
    [". ./x.sh", "'.' runs a string as shell code"],
    ["$CMD", "the program '$CMD' is only known when the command runs"],
    // biome-ignore lint/suspicious/noTemplateCurlyInString: shell syntax under test, not a template
    ["${CMD} x", "the program '${CMD}' is only known"],
    ['"$(echo rm)" x', "is only known when the command runs"],
    ["t*ch X", "the program 't*ch' is only known"],
    ["{touch,X}", "can't read"],
    ["for i in 1; do touch X; done", "'touch' not listed"],
    ["while touch X; do echo; done", "'touch' not listed"],
    ["if echo; then touch X; fi", "'touch' not listed"],
    ["case a in a) touch X;; esac", "'touch' not listed"],
    ["echo ok > $(touch X)", "'touch' not listed"],
    ["X=$(touch X) echo", "'touch' not listed"],
    // biome-ignore lint/suspicious/noTemplateCurlyInString: shell syntax under test, not a template
    ["echo ${X:-$(touch X)}", "'touch' not listed"],
    ["cat <<EOF\n$(touch X)\nEOF", "'cat', 'touch' not listed"],
    ["echo <<EOF\n`touch X`\nEOF", "parser did not read as one"],
    ["echo <<< $(touch X)", "'touch' not listed"],
    ["! touch X", "'touch' not listed"],
    ["tou\\\nch X", "line continuation"],
    ["echo (", "can't read"],
    ["PATH=. ls", "sets PATH"],
    ["PATH=.; ls", "sets PATH"],
    ["LD_PRELOAD=./x.so ls", "sets LD_PRELOAD"],
    ["alias ls=touch", "'alias' runs a string as shell code"],
    ["echo $((x))", "bash can evaluate as code"],
    // biome-ignore lint/suspicious/noTemplateCurlyInString: shell syntax under test, not a template
    ["echo ${!X}", "indirection"],
    ["[ -f x ]", "'[' not listed"],
  ])("refuses %j", async (command, reason) => {
    const message = await verdict(command);
    expect(message).toContain(reason);
    expect(message).toContain("allowed: echo, ls");
  });

  it.each([
    "echo hi",
    "ls -la | echo x",
    'echo "a;b"',
    "echo 'a && b'",
    "ls 2>/dev/null",
    "echo $HOME",
    // biome-ignore lint/suspicious/noTemplateCurlyInString: shell syntax under test, not a template
    "echo ${HOME:-/} $((1 + 2))",
    "X=1 echo $X",
    "/usr/bin/ls -la",
    "echo a; ls\nls && echo b || echo c &",
    "(ls) && { echo; }",
    "for f in a b; do echo $f; done",
    "echo $(ls)",
    "cat <<'EOF'\n$(touch X) `touch X`\nEOF".replace("cat", "echo"),
  ])("allows %j", async (command) => {
    expect(await verdict(command)).toBe("allowed");
  });

  it("a wrapper needs itself and what it runs listed, and refuses what it can't tell", async () => {
    const lists = ["env", "nice", "timeout", "xargs", "echo", "command", "sudo"];
    expect(await verdict("env X=1 echo hi", lists)).toBe("allowed");
    expect(await verdict("nice -n 5 timeout -s KILL 5 echo hi", lists)).toBe("allowed");
    expect(await verdict("xargs -0 -n 1", lists)).toBe("allowed"); // runs echo
    expect(await verdict("command -v touch", lists)).toBe("allowed"); // runs nothing
    expect(await verdict("command touch X", lists)).toContain("'touch' not listed");
    expect(await verdict("sudo -u root touch X", lists)).toContain("'touch' not listed");
    expect(await verdict("env -S 'touch X'", lists)).toContain("can't tell what 'env' runs");
    expect(await verdict("env $CMD", lists)).toContain("can't tell what 'env' runs");
    expect(await verdict("timeout $T touch X", lists)).toContain("can't tell what 'timeout' runs");
    expect(await verdict("sudo -s", lists)).toContain("unknown option '-s'");
    expect(await verdict("env PATH=. ls", [...lists, "ls"])).toContain("sets PATH");
    expect(await verdict("exec touch X", ["exec", "echo"])).toContain("'touch' not listed");
    expect(await verdict("xargs", ["xargs"])).toContain("'echo' not listed");
  });

  it("an absolute path counts as its name only when it is that name's program on PATH", async () => {
    expect(await verdict("/usr/bin/ls")).toBe("allowed");
    expect(await verdict("/tmp/ls", ["ls"])).toContain("'/tmp/ls' is not the 'ls' found on PATH");
    await expect(
      checkShellPolicy("ls", { allowCommands: ["ls"], denyPatterns: [], searchPath: ".:/usr/bin" }),
    ).rejects.toThrow(/relative entry '\.'/);
  });

  it("keeps denyPatterns as regular expressions on the whole command", async () => {
    await expect(
      checkShellPolicy("echo 'rm -rf /'", { allowCommands: ["echo"], denyPatterns: ["rm\\s+-rf"] }),
    ).rejects.toThrow(/deny pattern/);
    await expect(checkShellPolicy("touch X", { denyPatterns: [] })).resolves.toBeUndefined();
  });
});

describe("denyPatterns run on RE2, linear in the command", () => {
  it("a deny pattern that backtracks catastrophically in JavaScript decides a hostile command at once", async () => {
    // JavaScript's engine takes seconds on 30 characters for this pattern, doubling with each one more.
    const policy = { denyPatterns: ["^echo (a+)+$"] };
    const hostile = `echo ${"a".repeat(1024 * 1024)}!`;
    const started = performance.now();
    await expect(checkShellPolicy(hostile, policy)).resolves.toBeUndefined();
    expect(performance.now() - started).toBeLessThan(LINEAR_BOUND_MS);
    await expect(checkShellPolicy("echo aaaa", policy)).rejects.toThrow(/deny pattern/);
  });

  it("a pattern RE2 can't run is a config error naming tools.shell.denyPatterns, and fails closed if it gets through", async () => {
    expect(() => parseConfig({ tools: { shell: { denyPatterns: ["rm(?= -rf)"] } } })).toThrow(
      /tools\.shell\.denyPatterns\[0\]: .*lookaround/,
    );
    expect(() => parseConfig({ tools: { shell: { denyPatterns: ["(curl|wget).*\\1"] } } })).toThrow(
      /backreferences/,
    );
    expect(
      parseConfig({ tools: { shell: { denyPatterns: ["(?i)rm\\s+-rf"] } } }).tools.shell.denyPatterns,
    ).toEqual(["(?i)rm\\s+-rf"]);
    await expect(checkShellPolicy("ls", { denyPatterns: ["a(?=b)"] })).rejects.toThrow(/unusable pattern/);
  });
});
