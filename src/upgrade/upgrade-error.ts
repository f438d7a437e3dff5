import { MagpieError } from "../lib/errors.js";

/** Why an upgrade stopped; the message says what is left as it was and what to do. */
export class UpgradeError extends MagpieError {
  constructor(code: string, message: string, options?: { cause?: unknown }) {
    super(code, message, options);
    this.name = "UpgradeError";
  }
}
