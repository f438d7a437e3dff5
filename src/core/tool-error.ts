import { MagpieError } from "../lib/errors.js";

/**
 * A failure the model can act on. `code` is a rule ID for guard refusals (`file.system_path_read`,
 * `ssrf.private_address`) or a short error code; it reaches the model as `{"ok":false,"error":{code,message}}`
 * (with `"refused":true` after `ok` when a rule refused the call).
 */
export class ToolError extends MagpieError {
  constructor(code: string, message: string, options?: { cause?: unknown }) {
    super(code, message, options);
    this.name = "ToolError";
  }
}
