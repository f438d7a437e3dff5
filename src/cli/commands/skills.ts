import type { MagpieConfig } from "../../config/schema.js";
import { errorMessage } from "../../lib/errors.js";
import { scopeOf } from "../../security/path-resolver.js";
import { SkillApprovals } from "../../skills/skill-approvals.js";
import { SkillCatalog, skillDirs } from "../../skills/skill-catalog.js";
import { skillRows } from "../../skills/skill-rows.js";
import type { Store } from "../../store/index.js";
import type { CliCommand } from "../cli-env.js";
import { parseCli } from "../parse-cli.js";
import { jsonText } from "../terminal-output.js";

const USAGE = `Usage: magpie skills <command>
  list [--json]      every skill folder: name, state (loaded, hidden, changed — not loaded, new — not approved,
                     refused by the file guard, broken, shadowed), directory and content hash
  approve <name>     record the skill's current content hash; with skills.requireApproval only approved content loads`;

/** `magpie skills list|approve <name>`: skills and their approval state, read and written as the running Magpie does. */
export const run: CliCommand = async (argv, env) => {
  const parsed = parseCli(argv, env, USAGE, { json: { type: "boolean" } }, { positionals: true });
  if (typeof parsed === "number") return parsed;
  const { values, positionals } = parsed;
  const [command, ...rest] = positionals;
  const valid = (command === "list" && rest.length === 0) || (command === "approve" && rest.length === 1);
  if (!valid || (values.json && command !== "list")) {
    env.stderr.write(`${USAGE}\n`);
    return 2;
  }
  const config = env.loadConfig();
  const store = env.openStore(config);
  try {
    const catalog = catalogOf(config, store);
    if (command === "approve") {
      const result = await catalog.approve(rest[0]!, "cli");
      if ("error" in result) {
        env.stderr.write(`magpie skills approve: ${result.error}.\n`);
        return 1;
      }
      const { approval, files } = result;
      env.stdout.write(
        `Approved skill '${approval.name}' (${approval.file})\n${approval.hash}\nHashed: ${files.filter((file) => file !== ".").join(", ")}\n`,
      );
      if (!config.skills.requireApproval)
        env.stdout.write(
          "skills.requireApproval is off: every skill loads; this approval counts once it is on.\n",
        );
      return 0;
    }
    const rows = skillRows(await catalog.list({ hashes: true }));
    if (values.json) {
      env.stdout.write(`${jsonText({ requireApproval: config.skills.requireApproval, skills: rows }, 2)}\n`);
      return 0;
    }
    if (rows.length === 0) {
      env.stdout.write(`No skills. Add <dir>/<name>/SKILL.md in: ${catalog.dirs.join(", ")}\n`);
      return 0;
    }
    env.stdout.write(
      `skills.requireApproval: ${config.skills.requireApproval ? "on (only approved content loads)" : "off"}\n`,
    );
    for (const row of rows) env.stdout.write(`${row.name}\t${row.label}\t${row.dir}\t${row.hash ?? "-"}\n`);
    return 0;
  } finally {
    store.close();
  }
};

/** The catalog as the running Magpie builds it: same directories, file guard scope and level, same approvals. */
function catalogOf(config: MagpieConfig, store: Store): SkillCatalog {
  return new SkillCatalog({
    dirs: skillDirs(config.workspace, config.skills.dirs),
    guard: { scope: () => scopeOf(config), level: () => config.security.level },
    approval: { required: () => config.skills.requireApproval, approvals: new SkillApprovals(store.db) },
  });
}
