import fs from "node:fs/promises";
import { applyPatch, parsePatch, type StructuredPatch } from "diff";
import { z } from "zod";
import { errorMessage } from "../lib/errors.js";
import { type GuardFinding, judgeDeletions, judgePath } from "../security/file-guard.js";
import { type ResolvedPath, resolveToolPath } from "../security/path-resolver.js";
import { defineTool, ToolError } from "./define-tool.js";
import { checkSize, displayPath, readTextIfExists, writeText } from "./files/file-io.js";
import { markRead } from "./files/read-tracker.js";
import { enforceFindings, ensureWorkspace } from "./path-guard.js";

const DEV_NULL = "/dev/null";
/** The turn's tally of files its patches set out to delete (`TurnApprovals`). */
const DELETED_FILES = "apply_patch:deleted-files";

interface PlannedChange {
  kind: "create" | "modify" | "delete";
  resolved: ResolvedPath;
  before: string | null;
  after: string | null;
}

function stripPrefix(name: string | undefined): string | null {
  if (!name) return null;
  const trimmed = name.trim().split("\t")[0]!;
  if (trimmed === DEV_NULL) return DEV_NULL;
  return trimmed.replace(/^[ab]\//, "");
}

function patchPaths(file: StructuredPatch): { from: string | null; to: string | null } {
  return { from: stripPrefix(file.oldFileName), to: stripPrefix(file.newFileName) };
}

export const applyPatchTool = defineTool({
  name: "apply_patch",
  description:
    "Apply a unified diff (one or more files, `--- a/path` / `+++ b/path` headers; /dev/null creates or deletes). Atomic: either every hunk of every file applies, or nothing is changed.",
  inputSchema: z.object({
    patch: z.string().min(1).describe("The unified diff text."),
  }),
  risk: "high",
  async execute(input, context) {
    let files: StructuredPatch[];
    try {
      files = parsePatch(input.patch).filter(
        (file) => file.hunks.length > 0 || file.oldFileName || file.newFileName,
      );
    } catch (error) {
      throw new ToolError(
        "patch.invalid",
        `The patch could not be parsed: ${errorMessage(error)}. Send a unified diff with ---/+++ headers and @@ hunks.`,
      );
    }
    if (files.length === 0)
      throw new ToolError(
        "patch.invalid",
        "The patch contains no file changes. Send a unified diff with ---/+++ headers and @@ hunks.",
      );

    const scope = await ensureWorkspace(context);
    const level = context.config.security.level;
    const findings: GuardFinding[] = [];
    const planned: Array<{ file: StructuredPatch; kind: PlannedChange["kind"]; resolved: ResolvedPath }> = [];
    const seen = new Set<string>();
    for (const file of files) {
      const { from, to } = patchPaths(file);
      const kind = from === DEV_NULL ? "create" : to === DEV_NULL ? "delete" : "modify";
      const target = kind === "delete" ? from : to;
      if (!target || target === DEV_NULL)
        throw new ToolError("patch.invalid", "A file section has no usable path in its ---/+++ headers.");
      const resolved = await resolveToolPath(target, scope);
      if (seen.has(resolved.real))
        throw new ToolError(
          "patch.invalid",
          `${target} appears twice in the patch; merge its hunks into one section.`,
        );
      seen.add(resolved.real);
      findings.push(...judgePath(resolved, "write", level, scope));
      planned.push({ file, kind, resolved });
    }
    // Counted per turn, not per call: a mass deletion split into small patches is judged (and asked about) whole.
    const deleting = planned
      .filter((change) => change.kind === "delete")
      .map((change) => change.resolved.real);
    const turn = context.turnApprovals;
    const deletingNow = new Set(deleting);
    const earlier = (turn?.tally(DELETED_FILES) ?? []).filter((file) => !deletingNow.has(file));
    turn?.count(DELETED_FILES, deleting);
    const total = earlier.length + deleting.length;
    const deletions =
      deleting.length > 0 && total > (turn?.approved(DELETED_FILES) ?? 0)
        ? judgeDeletions(total, level)
        : null;
    if (deletions) {
      findings.push(
        earlier.length > 0
          ? { ...deletions, path: `${total} files in this turn (${deleting.length} in this patch)` }
          : deletions,
      );
    }
    const earlierNote =
      deletions && earlier.length > 0
        ? `; earlier patches of this turn set out to delete ${earlier.join(", ")}`
        : "";
    await enforceFindings(
      context,
      findings,
      `apply_patch to ${planned.map((change) => change.resolved.real).join(", ")}${earlierNote}`,
    );
    if (deletions?.verdict === "warn") turn?.approve(DELETED_FILES, total);

    // Compute every result in memory first: nothing touches the disk unless all hunks apply.
    const changes: PlannedChange[] = [];
    const failures: string[] = [];
    for (const { file, kind, resolved } of planned) {
      const shown = displayPath(context, resolved.real);
      if (resolved.isDirectory) {
        failures.push(`${shown}: is a directory`);
        continue;
      }
      const before = await readTextIfExists(resolved.real);
      if (kind === "create" && before !== null) {
        failures.push(`${shown}: already exists (the patch creates it from /dev/null)`);
        continue;
      }
      if (kind !== "create" && before === null) {
        failures.push(`${shown}: does not exist`);
        continue;
      }
      if (before !== null) checkSize(context, Buffer.byteLength(before), shown);
      const result = applyPatch(before ?? "", file);
      if (result === false) {
        failures.push(`${shown}: a hunk does not match the current content`);
        continue;
      }
      if (kind === "delete" && result.trim() !== "") {
        failures.push(`${shown}: deletion hunk does not cover the whole file`);
        continue;
      }
      checkSize(context, Buffer.byteLength(result), shown);
      changes.push({ kind, resolved, before, after: kind === "delete" ? null : result });
    }
    if (failures.length > 0) {
      throw new ToolError(
        "patch.does_not_apply",
        `The patch was not applied (no file was changed):\n- ${failures.join("\n- ")}\nRead the files again and regenerate the patch against their current content.`,
      );
    }

    const done: PlannedChange[] = [];
    try {
      for (const change of changes) {
        if (change.after === null) await fs.rm(change.resolved.real);
        else await writeText(change.resolved.real, change.after);
        done.push(change);
      }
    } catch (error) {
      // Roll back what was already written so a failing write leaves the tree as it was.
      for (const change of done.reverse()) {
        if (change.before === null) await fs.rm(change.resolved.real, { force: true });
        else await writeText(change.resolved.real, change.before);
      }
      throw new ToolError(
        "patch.write_failed",
        `Writing ${displayPath(context, changes[done.length]?.resolved.real ?? "")} failed (${errorMessage(error)}); all changes were rolled back.`,
      );
    }
    for (const change of changes) if (change.after !== null) await markRead(context, change.resolved.real);
    const summary = changes.map((change) => {
      const verb = change.kind === "create" ? "created" : change.kind === "delete" ? "deleted" : "modified";
      return `${verb} ${displayPath(context, change.resolved.real)}`;
    });
    return `Patch applied to ${changes.length} file${changes.length === 1 ? "" : "s"}:\n${summary.join("\n")}`;
  },
});
