import { z } from "zod";
import { GuardRefusal } from "../security/guard-refusal.js";
import { defineTool } from "./define-tool.js";

/** `invoke_skill {skill_name}`: a skill's full SKILL.md, or the list of skills when the name is unknown. */
export const invokeSkillTool = defineTool({
  name: "invoke_skill",
  description:
    "Read a skill (a how-to note from the workspace's skills folder) by name: returns its full text. An unknown name returns the list of skills.",
  inputSchema: z.object({ skill_name: z.string().min(1).describe("The skill's name, as listed") }),
  risk: "low",
  execute: async ({ skill_name }, context) => {
    const catalog = context.services.skills;
    if (!catalog) return "Skills are not set up in this Magpie.";
    const found = await catalog.find(skill_name);
    if (found && "text" in found) return `Skill '${found.name}' (${found.file}):\n\n${found.text}`;
    // A folder the file guard refused while scanning: the refusal, never the file.
    if (found)
      throw new GuardRefusal(
        found.rule,
        `Skill folder '${found.folder}' was not loaded: refused by ${found.rule} — ${found.file} ${found.reason}. Ask the owner to copy the skill into the skills directory if it is wanted.`,
      );
    const names = (await catalog.list()).available.map(
      (entry) => `- ${entry.name}: ${entry.description.split("\n")[0]}`,
    );
    return names.length > 0
      ? `There is no skill named '${skill_name}'. Skills:\n${names.join("\n")}`
      : `There is no skill named '${skill_name}', and no skills are available.`;
  },
});
