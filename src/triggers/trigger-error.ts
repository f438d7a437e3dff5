import { MagpieError } from "../lib/errors.js";

/** A trigger that can't be made or changed; the message names the value and the fix. */
export class TriggerError extends MagpieError {
  constructor(code: string, message: string) {
    super(code, message);
    this.name = "TriggerError";
  }
}
