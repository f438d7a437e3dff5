import { MagpieError } from "../lib/errors.js";

/** A scheduling request that can't be honoured (bad expression, unknown job …); the message names the fix. */
export class SchedulerError extends MagpieError {
  constructor(code: string, message: string) {
    super(code, message);
    this.name = "SchedulerError";
  }
}
