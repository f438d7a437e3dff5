import { ToolError } from "../core/tool-error.js";

/** Parses "0a ff 10", "0x0aff10" or "0A,FF" into bytes; refuses anything else. */
export function parseHex(text: string, field = "data"): Buffer {
  const cleaned = text.replace(/0x/gi, "").replace(/[\s,:]/g, "");
  if (cleaned.length === 0 || cleaned.length % 2 !== 0 || !/^[0-9a-fA-F]+$/.test(cleaned))
    throw new ToolError(
      "hardware.invalid_hex",
      `${field} must be hex bytes like "0a ff 10" (got ${JSON.stringify(text.slice(0, 40))}).`,
    );
  return Buffer.from(cleaned, "hex");
}

/** Bytes as space-separated lowercase hex. */
export function toHex(bytes: Uint8Array): string {
  return [...bytes].map((byte) => byte.toString(16).padStart(2, "0")).join(" ");
}

/** A byte value as 0x.. */
export function hexByte(value: number): string {
  return `0x${value.toString(16).padStart(2, "0")}`;
}
