import path from "node:path";
import { folderOf, type SkillListing, skillDirOf } from "./skill-catalog.js";

/** One skill folder's state, as `magpie skills list` and `/skills` show it. */
export interface SkillRow {
  /** The skill's name (the folder's name when the file was never read or is broken). */
  name: string;
  /** The skills directory it was found in. */
  dir: string;
  state: "loaded" | "hidden" | "changed" | "new" | "refused" | "broken" | "shadowed";
  /** The state in words: "changed — not loaded", "hidden (needs program rsync)" … */
  label: string;
  /** `sha256:<hex>` of the folder, when it was hashed. */
  hash: string | null;
}

/** Every skill folder of a listing with its state, in a fixed order (loaded first). */
export function skillRows(listing: SkillListing): SkillRow[] {
  return [
    ...listing.available.map((skill) => ({
      name: skill.name,
      dir: skillDirOf(skill.file),
      state: "loaded" as const,
      label: "loaded",
      hash: skill.hash ?? null,
    })),
    ...listing.unapproved.map(({ skill, state }) => ({
      name: skill.name,
      dir: skillDirOf(skill.file),
      state,
      label: state === "changed" ? "changed — not loaded" : "new — not approved",
      hash: skill.hash,
    })),
    ...listing.hidden.map(({ skill, missing }) => ({
      name: skill.name,
      dir: skillDirOf(skill.file),
      state: "hidden" as const,
      label: `hidden (needs ${missing.join(", ")})`,
      hash: skill.hash ?? null,
    })),
    ...listing.refused.map((refusal) => ({
      name: refusal.folder === refusal.file ? path.basename(refusal.file) : refusal.folder,
      dir: refusal.dir ?? skillDirOf(refusal.file),
      state: "refused" as const,
      label: `refused by the file guard (${refusal.rule})`,
      hash: null,
    })),
    ...listing.problems.map((problem) => ({
      name: folderOf(problem.file),
      dir: skillDirOf(problem.file),
      state: "broken" as const,
      label: `broken (${problem.error})`,
      hash: null,
    })),
    ...listing.duplicates.map(({ skill, shadowedBy }) => ({
      name: skill.name,
      dir: skillDirOf(skill.file),
      state: "shadowed" as const,
      label: `shadowed by ${path.dirname(shadowedBy.file)} (the first skill of a name wins; not loaded)`,
      hash: null,
    })),
  ];
}
