import { z } from "zod";
import { defineTool } from "./define-tool.js";

/** `invoke_skill {skill_name}`: a skill's full SKILL.md, or the list of skills when the name is unknown. */
export const invokeSkillTool = defineTool({
  name: "invoke_skill",
  description:
    "Read a skill (a how-to note from the workspace's skills folder) by name: returns its full text. An unknown name returns the list of skills.",
  inputSchema: z.object({ skill_name: z.string().min(1).describe("The skill's name, as listed") }),
  risk: "low",
  execute: ({ skill_name }, context) => {
    const catalog = context.services.skills;
    if (!catalog) return "Skills are not set up in this Magpie.";
    const skill = catalog.get(skill_name);
    if (skill) return `Skill '${skill.name}' (${skill.file}):\n\n${skill.text}`;
    const names = catalog
      .list()
      .available.map((entry) => `- ${entry.name}: ${entry.description.split("\n")[0]}`);
    return names.length > 0
      ? `There is no skill named '${skill_name}'. Skills:\n${names.join("\n")}`
      : `There is no skill named '${skill_name}', and no skills are available.`;
  },
});
