import { describe, expect, it } from "vitest";
import { parseAddArguments } from "../../src/scheduler/cron-command.js";

describe("/cron add arguments", () => {
  it("accepts a quoted expression, as people type it", () => {
    expect(parseAddArguments('"*/5 * * * *" uptime')).toEqual({
      expression: "*/5 * * * *",
      command: "uptime",
    });
    expect(parseAddArguments("'0 9 1 * 1' message: report day")).toEqual({
      expression: "0 9 1 * 1",
      message: "report day",
    });
    // Phones turn straight quotes into curly ones.
    expect(parseAddArguments("“*/10 * * * * *” prompt: check the disk")).toEqual({
      expression: "*/10 * * * * *",
      prompt: "check the disk",
    });
    expect(parseAddArguments('"30m" message: stretch')).toEqual({ delay: "30m", message: "stretch" });
  });

  it("keeps quotes that belong to the payload", () => {
    expect(parseAddArguments('0 8 * * * echo "hi there"')).toEqual({
      expression: "0 8 * * *",
      command: 'echo "hi there"',
    });
    expect(parseAddArguments('"0 8 * * *" echo "hi"')).toEqual({
      expression: "0 8 * * *",
      command: 'echo "hi"',
    });
  });
});
