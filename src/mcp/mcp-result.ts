import { mkdirSync, writeFileSync } from "node:fs";
import path from "node:path";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { ToolError } from "../tools/define-tool.js";

const MEDIA_DIR = "mcp-files";
const MAX_MEDIA_BYTES = 10 * 1024 * 1024;
const EXTENSIONS: Record<string, string> = {
  "image/png": "png",
  "image/jpeg": "jpg",
  "image/gif": "gif",
  "image/webp": "webp",
  "audio/wav": "wav",
  "audio/mpeg": "mp3",
  "application/pdf": "pdf",
};

interface ResultSource {
  server: string;
  tool: string;
  workspace: string;
}

/**
 * An MCP tool result as text for the model: text blocks as they are, structured content as JSON, images, audio
 * and binary resources saved under `<workspace>/mcp-files/` (the model gets the path: `image_info`, `message`
 * with a file). A result marked `isError` becomes a tool error.
 */
export function formatMcpResult(result: CallToolResult, source: ResultSource): string {
  const parts: string[] = [];
  let saved = 0;
  for (const block of result.content ?? []) {
    switch (block.type) {
      case "text":
        parts.push(block.text);
        break;
      case "image":
      case "audio":
        parts.push(saveMedia(block.data, block.mimeType, block.type, source, saved++));
        break;
      case "resource": {
        const resource = block.resource;
        if ("text" in resource && typeof resource.text === "string")
          parts.push(`Resource ${resource.uri}:\n${resource.text}`);
        else if ("blob" in resource && typeof resource.blob === "string")
          parts.push(
            saveMedia(
              resource.blob,
              resource.mimeType ?? "application/octet-stream",
              `resource ${resource.uri}`,
              source,
              saved++,
            ),
          );
        break;
      }
      case "resource_link":
        parts.push(
          `Resource link: ${block.name} ${block.uri}${block.description ? ` — ${block.description}` : ""}`,
        );
        break;
      default:
        parts.push(`[${(block as { type: string }).type} content]`);
    }
  }
  const hasText = parts.length > 0;
  if (result.structuredContent && !hasText) parts.push(JSON.stringify(result.structuredContent, null, 2));
  const text = parts.join("\n\n") || "(the tool returned no content)";
  if (result.isError)
    throw new ToolError(
      "mcp.tool_error",
      `MCP tool '${source.tool}' on server '${source.server}' reported an error: ${text}`,
    );
  return text;
}

function saveMedia(
  base64: string,
  mimeType: string,
  kind: string,
  source: ResultSource,
  index: number,
): string {
  const bytes = Buffer.from(base64, "base64");
  if (bytes.length > MAX_MEDIA_BYTES)
    return `[${kind}: ${mimeType}, ${bytes.length} bytes — too large to keep]`;
  const extension = EXTENSIONS[mimeType] ?? "bin";
  const stamp = new Date().toISOString().replace(/[:.]/g, "-");
  const tool = source.tool.replace(/[^a-zA-Z0-9_-]/g, "_");
  const relative = path.join(MEDIA_DIR, `${source.server}-${tool}-${stamp}-${index}.${extension}`);
  const directory = path.join(source.workspace, MEDIA_DIR);
  mkdirSync(directory, { recursive: true });
  writeFileSync(path.join(source.workspace, relative), bytes);
  return `[${kind} saved to ${relative} (${mimeType}, ${bytes.length} bytes)]`;
}
