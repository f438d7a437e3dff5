import type { IncomingMessage } from "node:http";

/** One uploaded file of a multipart/form-data body. */
export interface UploadedFile {
  filename: string;
  contentType?: string;
  content: Buffer;
}

/** Fields (text) and files of a multipart/form-data body, by part name. */
export interface MultipartBody {
  fields: Record<string, string>;
  files: Record<string, UploadedFile>;
}

/** Reads a request body as bytes (uploads are binary: a string body would mangle them). */
export async function readBytes(request: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of request) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

/**
 * Parses multipart/form-data as the clients write it. Tolerant on purpose: grammY writes
 * `content-disposition:form-data;name="x";filename=a.png` (no spaces, unquoted filename), undici (discord.js)
 * the quoted form.
 */
export function parseMultipart(body: Buffer, contentType: string): MultipartBody | null {
  const boundary = /boundary=(?:"([^"]+)"|([^;]+))/i.exec(contentType);
  if (!contentType.toLowerCase().startsWith("multipart/form-data") || !boundary) return null;
  const delimiter = Buffer.from(`--${boundary[1] ?? boundary[2]!.trim()}`);
  const out: MultipartBody = { fields: {}, files: {} };
  let at = body.indexOf(delimiter);
  while (at >= 0) {
    const start = at + delimiter.length;
    if (body.subarray(start, start + 2).toString() === "--") break;
    const next = body.indexOf(delimiter, start);
    if (next < 0) break;
    // Each part: CRLF, headers, blank line, content, CRLF before the next delimiter.
    const part = body.subarray(start + 2, next - 2);
    const split = part.indexOf("\r\n\r\n");
    const headers = part.subarray(0, split).toString("utf8");
    const content = part.subarray(split + 4);
    const name = /name="([^"]*)"|name=([^;\r\n]+)/i.exec(headers);
    const filename = /filename="([^"]*)"|filename=([^;\r\n]+)/i.exec(headers);
    const type = /content-type:\s*([^\r\n]+)/i.exec(headers);
    const key = name?.[1] ?? name?.[2]?.trim() ?? "";
    if (filename) {
      out.files[key] = {
        filename: filename[1] ?? filename[2]!.trim(),
        contentType: type?.[1]?.trim(),
        content: Buffer.from(content),
      };
    } else {
      out.fields[key] = content.toString("utf8");
    }
    at = next;
  }
  return out;
}
