import path from "node:path";
import type { CommandContext, SlashCommand } from "../core/commands.js";
import type { SkillCatalog } from "./skill-catalog.js";

const USAGE =
  "Usage: /skills — the skills and their state; /skills approve <name> — approve a skill's content";

/**
 * `/skills`: available skills, unapproved ones, hidden ones with what they miss, broken files, refused folders.
 * `/skills approve <name>` records the skill's content hash (owners only: a guest or a group member who is not an
 * owner is refused, whatever the command registry says).
 */
export function skillsCommand(catalog: SkillCatalog): SlashCommand {
  return {
    name: "skills",
    description: "Skills the agent can read (SKILL.md files); approve <name> pins one's content",
    usage: "/skills [approve <name>]",
    async run(context) {
      // `args` is absent when a caller runs the command without a message (the dashboard, tests).
      const [verb, ...rest] = (context?.args ?? "").split(/\s+/).filter(Boolean);
      if (!verb) return listText(catalog);
      if (verb.toLowerCase() === "approve" && rest.length === 1) return approve(catalog, context, rest[0]!);
      return USAGE;
    },
  };
}

async function approve(catalog: SkillCatalog, context: CommandContext, name: string): Promise<string> {
  if (context.sender.role !== "owner") return "Only an owner can approve a skill.";
  const result = await catalog.approve(name, `${context.sender.channel}:${context.sender.userId}`);
  if ("error" in result) return `Not approved: ${result.error}.`;
  const { approval, files } = result;
  return [
    `Approved skill '${approval.name}' (${approval.file}), ${approval.hash}.`,
    `Hashed: ${files.filter((file) => file !== ".").join(", ")}.`,
    catalog.approvalRequired
      ? "It loads as long as its folder keeps this content."
      : "skills.requireApproval is off: every skill loads; this approval counts once it is on.",
  ].join("\n");
}

async function listText(catalog: SkillCatalog): Promise<string> {
  const { available, hidden, problems, refused, unapproved, duplicates } = await catalog.list();
  const lines: string[] = [];
  if (
    available.length === 0 &&
    hidden.length === 0 &&
    problems.length === 0 &&
    refused.length === 0 &&
    unapproved.length === 0
  )
    return `No skills yet. Add <dir>/<name>/SKILL.md with name and description front matter in: ${catalog.dirs.join(", ")}.`;
  if (available.length > 0) {
    lines.push("Skills:");
    for (const skill of available) lines.push(`• ${skill.name} — ${skill.description.split("\n")[0]}`);
  }
  const changed = unapproved.filter((entry) => entry.state === "changed");
  if (changed.length > 0) {
    lines.push(
      "Changed — not loaded (the content is not the one approved; /skills approve <name> to load it):",
    );
    for (const { skill, approval } of changed)
      lines.push(`• ${skill.name} — changed since ${approval?.approvedBy ?? "an owner"} approved it`);
  }
  const fresh = unapproved.filter((entry) => entry.state === "new");
  if (fresh.length > 0) {
    lines.push("New — not approved (skills.requireApproval; /skills approve <name> to load it):");
    for (const { skill } of fresh) lines.push(`• ${skill.name} — ${skill.description.split("\n")[0]}`);
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
  if (duplicates.length > 0) {
    lines.push("Shadowed (a skill of the same name comes first; not loaded):");
    for (const { skill, shadowedBy } of duplicates)
      lines.push(`• ${skill.name} in ${path.dirname(skill.file)} — ${path.dirname(shadowedBy.file)} wins`);
  }
  return lines.join("\n");
}
