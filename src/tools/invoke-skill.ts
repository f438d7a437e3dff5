import { z } from "zod";
import { ToolError } from "../core/tool-error.js";
import { GuardRefusal } from "../security/guard-refusal.js";
import { shownName } from "../skills/skill-catalog.js";
import { defineTool } from "./define-tool.js";

/**
 * `invoke_skill {skill_name}`: a skill's full SKILL.md, or the list of skills when the name is unknown. With
 * `skills.requireApproval` a new or changed skill is refused with the fix (an owner's `/skills approve <name>`);
 * there is deliberately no tool that approves.
 */
export const invokeSkillTool = defineTool({
  name: "invoke_skill",
  description:
    "Read a skill (a how-to note from the workspace's skills folder) by name: returns its full text. An unknown name returns the list of skills.",
  inputSchema: z.object({ skill_name: z.string().min(1).describe("The skill's name, as listed") }),
  risk: "low",
  execute: async ({ skill_name }, context) => {
    const catalog = context.services.skills;
    if (!catalog) return "Skills are not set up in this Magpie.";
    const found = await catalog.load(skill_name);
    if (found && "skill" in found)
      return `Skill '${found.skill.name}' (${found.skill.file}):\n\n${found.skill.text}`;
    // A folder the file guard refused while scanning: the refusal, never the file.
    if (found && "refusal" in found)
      throw new GuardRefusal(
        found.refusal.rule,
        `Skill folder '${found.refusal.folder}' was not loaded: refused by ${found.refusal.rule} — ${found.refusal.file} ${found.refusal.reason}. Ask the owner to copy the skill into the skills directory if it is wanted.`,
      );
    if (found && "unapproved" in found) {
      const { skill, state } = found.unapproved;
      throw new GuardRefusal(
        "skill.not_approved",
        `Skill '${skill.name}' is not loaded: ${state === "changed" ? "its files changed since an owner approved it" : "it is new and no owner has approved it"} (skills.requireApproval). An owner can load it with /skills approve ${skill.name} (or magpie skills approve ${skill.name}) after reading it.`,
      );
    }
    if (found)
      throw new ToolError(
        "skill.unreadable",
        `Skill '${shownName(skill_name)}' could not be read: ${found.problem.error}. Try again.`,
      );
    const names = (await catalog.list()).available.map(
      (entry) => `- ${entry.name}: ${entry.description.split("\n")[0]}`,
    );
    return names.length > 0
      ? `There is no skill named '${shownName(skill_name)}'. Skills:\n${names.join("\n")}`
      : `There is no skill named '${shownName(skill_name)}', and no skills are available.`;
  },
});
