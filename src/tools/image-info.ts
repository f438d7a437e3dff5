import fs from "node:fs/promises";
import { z } from "zod";
import { defineTool, ToolError } from "./define-tool.js";
import { displayPath, requireExistingFile } from "./files/file-io.js";
import { describeImage } from "./files/image.js";
import { guardPath } from "./path-guard.js";

/** Base64 is only offered for images up to this size, whatever the file-size cap. */
const MAX_BASE64_BYTES = 5 * 1024 * 1024;

export const imageInfoTool = defineTool({
  name: "image_info",
  description:
    "Describe an image file: format, width/height in pixels, size in bytes; optionally its base64 content (≤ 5 MB).",
  inputSchema: z.object({
    path: z.string().min(1).describe("Image path, relative to the workspace or absolute."),
    include_base64: z
      .boolean()
      .optional()
      .describe("Also return the file as base64 (only for files up to 5 MB)."),
  }),
  risk: "low",
  readOnly: true,
  async execute(input, context) {
    const resolved = await guardPath(context, input.path, "read");
    requireExistingFile(resolved);
    const stats = await fs.stat(resolved.real);
    const image = await describeImage(resolved.real);
    if (!image.format) {
      throw new ToolError(
        "image.unrecognized",
        `${input.path} is not an image format image_info recognizes (png, jpg, gif, webp, bmp, tiff, svg, ico …).`,
      );
    }
    const info: Record<string, unknown> = {
      path: displayPath(context, resolved.real),
      format: image.format,
      width: image.width,
      height: image.height,
      size_bytes: stats.size,
    };
    if (input.include_base64) {
      if (stats.size > MAX_BASE64_BYTES) {
        throw new ToolError(
          "image.too_large_for_base64",
          `${input.path} is ${stats.size} bytes; base64 is only returned for images up to ${MAX_BASE64_BYTES} bytes.`,
        );
      }
      info.base64 = (await fs.readFile(resolved.real)).toString("base64");
    }
    return info;
  },
});
