import { z } from "zod";
import { errorMessage } from "../../lib/errors.js";
import { linearRegex } from "../linear-regex.js";
import { defineSource, type TriggerSourceModule } from "../trigger-source.js";

/** `on: {serial: …}`. */
export const serialOn = z.strictObject({
  serial: z.strictObject({
    /** The serial device (`/dev/ttyACM0`) or a `hardware.boards` name. */
    port: z.string().min(1),
    baud: z.number().int().positive().optional(),
    /** A regular expression a line must match; run by a linear-time engine (no backreferences or lookaround). */
    match: z.string().min(1),
  }),
});

/**
 * `on: {serial: {port, baud?, match}}`: lines of a configured board's port matching a pattern (run by a
 * linear-time engine), through the hardware service's serial manager (its one guard).
 */
export const serialSource: TriggerSourceModule<"serial", typeof serialOn> = defineSource({
  key: "serial",
  on: serialOn,
  listensTo: "a serial line matching a regex",
  example: '{"serial": {"port", "match"}}',
  pick: (on) => ("serial" in on ? on.serial : undefined),
  reaches: { tool: "serial", does: "reads a board's serial port" },
  describe: (on) => `${on.port} /${on.match}/`,
  problems(on, _trigger, context, at) {
    const problems: string[] = [];
    const compiled = linearRegex(on.match);
    if (typeof compiled === "string") problems.push(`${at}.match: ${compiled}`);
    const serial = context.hardware?.serial;
    if (!serial)
      problems.push(`${at}: no hardware.boards are configured (a serial trigger reads a board's port)`);
    else if (!serial.configuredPort(on.port))
      problems.push(
        `${at}.port: "${on.port}" is not a configured board's port — name a board from hardware.boards or its port`,
      );
    return problems;
  },
  async start(on, trigger, context, emit) {
    const pattern = linearRegex(on.match);
    const manager = context.hardware?.serial;
    if (typeof pattern === "string" || !manager) return () => {};
    const logger = context.logger;
    try {
      return await manager.listen(on.port, on.baud, {
        line: (line) => {
          const match = pattern.exec(line);
          if (!match) return;
          emit({
            source: "serial",
            line,
            payload: { line, groups: match.slice(1), named: match.groups ?? {} },
            at: context.now(),
          });
        },
        closed: (error) =>
          logger.error(
            { trigger: trigger.name, port: on.port, error: error ? errorMessage(error) : "closed" },
            "trigger-serial-closed",
          ),
      });
    } catch (error) {
      logger.error(
        { trigger: trigger.name, port: on.port, error: errorMessage(error) },
        "trigger-serial-open-failed",
      );
      return () => {};
    }
  },
});
