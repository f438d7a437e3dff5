import fs from "node:fs/promises";
import path from "node:path";
import { createTwoFilesPatch } from "diff";
import { errorCode } from "../../lib/errors.js";
import type { ToolContext } from "../context.js";
import { ToolError } from "../define-tool.js";

/** Refuses files above `tools.files.maxFileSizeBytes`. */
export function checkSize(context: ToolContext, bytes: number, file: string): void {
  const limit = context.config.tools.files.maxFileSizeBytes;
  if (bytes > limit) {
    throw new ToolError(
      "file.too_large",
      `${file} is ${bytes} bytes, above the ${limit}-byte limit (tools.files.maxFileSizeBytes). Use file_grep or shell tools such as head/tail on it.`,
    );
  }
}

/** Reads a text file, or "" when it doesn't exist. */
export async function readTextIfExists(file: string): Promise<string | null> {
  try {
    return await fs.readFile(file, "utf8");
  } catch (error) {
    if (errorCode(error) === "ENOENT") return null;
    throw error;
  }
}

/** Writes a file, creating parent directories. */
export async function writeText(file: string, content: string): Promise<void> {
  await fs.mkdir(path.dirname(file), { recursive: true });
  await fs.writeFile(file, content, "utf8");
}

/** A unified diff between two versions of one file (empty string when unchanged). */
export function unifiedDiff(displayPath: string, before: string, after: string): string {
  if (before === after) return "";
  return createTwoFilesPatch(`a/${displayPath}`, `b/${displayPath}`, before, after, undefined, undefined, {
    context: 3,
  })
    .split("\n")
    .filter((line) => !line.startsWith("===="))
    .join("\n")
    .trimEnd();
}

/** A path relative to the workspace when inside it, else absolute — what results show the model. */
export function displayPath(context: ToolContext, realPath: string): string {
  const relative = path.relative(context.config.workspace, realPath);
  return relative && !relative.startsWith("..") && !path.isAbsolute(relative) ? relative : realPath;
}

/** Throws file.not_found / file.is_directory with a message the model can act on. */
export function requireExistingFile(resolved: {
  exists: boolean;
  isDirectory: boolean;
  requested: string;
  real: string;
}): void {
  if (!resolved.exists) {
    throw new ToolError(
      "file.not_found",
      `No file at ${resolved.requested} (${resolved.real}). Check the path with file_list or file_find.`,
    );
  }
  if (resolved.isDirectory) {
    throw new ToolError(
      "file.is_directory",
      `${resolved.requested} is a directory. Use file_list to see its entries.`,
    );
  }
}
