import { z } from "zod";
import { compileCron, cronProblem } from "../../scheduler/cron-expression.js";
import { defineSource, type TriggerSourceModule } from "../trigger-source.js";

/** `on: {cron: …}`. */
export const cronOn = z.strictObject({
  /** A cron expression: the trigger's `when` is checked on this schedule. */
  cron: z.string().min(1),
});

/** `on: {cron: <expression>}`: a check on a schedule (in `timezone`); the event carries the time it ran. */
export const cronSource: TriggerSourceModule<"cron", typeof cronOn> = defineSource({
  key: "cron",
  on: cronOn,
  listensTo: "a cron check",
  example: '{"cron": "<expression>"}',
  pick: (on) => ("cron" in on ? on.cron : undefined),
  describe: (expression) => expression,
  problems(expression, _trigger, _context, at) {
    const problem = cronProblem(expression);
    return problem ? [`${at}: ${problem}`] : [];
  },
  start(expression, _trigger, context, emit) {
    const schedule = compileCron(expression, context.config.timezone);
    let timer: NodeJS.Timeout | null = null;
    const arm = () => {
      const now = context.now();
      const due = schedule.next(now);
      // Long waits are taken in steps: setTimeout can't wait past ~24.8 days.
      const wait = Math.min(due - now, 2 ** 31 - 1);
      timer = setTimeout(
        () => {
          const at = context.now();
          if (at >= due) emit({ source: "cron", payload: { at: new Date(at).toISOString() }, at });
          arm();
        },
        Math.max(wait, 0),
      );
      timer.unref();
    };
    arm();
    return () => {
      if (timer) clearTimeout(timer);
    };
  },
});
