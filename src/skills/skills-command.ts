import path from "node:path";
import type { SlashCommand } from "../core/commands.js";
import type { SkillCatalog } from "./skill-catalog.js";

/** `/skills`: available skills, hidden ones with what they miss, files with bad front matter, refused folders. */
export function skillsCommand(catalog: SkillCatalog): SlashCommand {
  return {
    name: "skills",
    description: "Skills the agent can read (SKILL.md files)",
    async run() {
      const { available, hidden, problems, refused } = await catalog.list();
      const lines: string[] = [];
      if (available.length === 0 && hidden.length === 0 && problems.length === 0 && refused.length === 0)
        return `No skills yet. Add <dir>/<name>/SKILL.md with name and description front matter in: ${catalog.dirs.join(", ")}.`;
      if (available.length > 0) {
        lines.push("Skills:");
        for (const skill of available) lines.push(`• ${skill.name} — ${skill.description.split("\n")[0]}`);
      }
      if (hidden.length > 0) {
        lines.push("Hidden (requirements missing):");
        for (const { skill, missing } of hidden) lines.push(`• ${skill.name} — needs ${missing.join(", ")}`);
      }
      if (problems.length > 0) {
        lines.push("Broken:");
        for (const problem of problems)
          lines.push(`• ${path.basename(path.dirname(problem.file))}/SKILL.md — ${problem.error}`);
      }
      if (refused.length > 0) {
        lines.push("Refused by the file guard (not loaded):");
        for (const refusal of refused) lines.push(`• ${refusal.folder} — ${refusal.rule}: ${refusal.reason}`);
      }
      return lines.join("\n");
    },
  };
}
