import { describe, expect, it } from "vitest";
import type { AuthorityPort } from "../../src/core/identity.js";
import { ownerIdentity } from "../../src/core/identity.js";
import type { Messenger } from "../../src/core/messenger.js";
import {
  type ActionSource,
  actionApprover,
  authorityRefusal,
  createActionRunner,
  SHELL_TOOL,
} from "../../src/scheduler/action-runner.js";
import type { JobCreator } from "../../src/scheduler/job.js";

/** The one runner's seam: the rule, the approver and delivery every source (jobs, triggers, watches) goes through. */

const guest: JobCreator = { identity: { channel: "telegram", userId: "g1", role: "guest" } };
const narrowOwner: JobCreator = { identity: ownerIdentity("telegram"), toolNames: ["file_read"] };
const configOwner: JobCreator = { identity: ownerIdentity("local") };
const from: ActionSource = { kind: "trigger", id: "door", label: 'trigger "door"', origin: "event" };
const chat = { channel: "telegram", chatId: "42" };
const refusing: AuthorityPort = { roleOf: () => "owner", mayDeliver: () => false };

function rig(authority: AuthorityPort) {
  const executed: string[] = [];
  const sent: string[] = [];
  const messenger: Messenger = {
    send: (_target, message) => {
      sent.push(message.text ?? "");
      return sent.length;
    },
    waitForDelivery: async () => "sent",
  };
  const runner = createActionRunner({
    tools: {
      execute: async (call) => {
        executed.push(call.function.name);
        return JSON.stringify({ exit_code: 0, stdout: "ran", stderr: "" });
      },
      resolveToolSet: () => [],
    },
    agent: { run: async () => ({ ok: true, text: "answer" }) },
    authority: () => authority,
    messenger,
  });
  return { runner, executed, sent };
}

describe("action runner", () => {
  it("one rule: a guest never, a missing tool names itself, the owner's config actions always", () => {
    expect(authorityRefusal(guest, [])).toEqual({ rule: "guest_not_allowed" });
    expect(authorityRefusal(narrowOwner, [SHELL_TOOL])).toMatchObject({
      rule: "tool_not_allowed",
      tool: "shell",
    });
    expect(authorityRefusal(narrowOwner, [{ tool: "gpio", does: "reads a GPIO pin" }])).toMatchObject({
      tool: "gpio",
      tools: "file_read",
    });
    expect(
      authorityRefusal(configOwner, [SHELL_TOOL, { tool: "gpio", does: "reads a GPIO pin" }]),
    ).toBeNull();
  });

  it("attack: a guest's command action is refused before the shell tool is reached", async () => {
    const { runner, executed } = rig({ roleOf: () => "owner", mayDeliver: () => true });
    const result = await runner.run({
      from,
      owner: { creator: guest, source: "chat", chat },
      work: { kind: "shell", command: "id" },
      run: 1,
      signal: new AbortController().signal,
    });
    expect(result).toMatchObject({ ok: false, refused: true });
    expect(result.text).toMatch(/^Refused \(trigger\.guest_not_allowed\)/);
    expect(executed).toEqual([]);
  });

  it("attack: no approver in a chat Magpie may not post to; a chat action's report chat never approves", () => {
    expect(actionApprover({ creator: configOwner, source: "config", chat }, refusing)).toBeUndefined();
    const allowing: AuthorityPort = { roleOf: () => "owner", mayDeliver: () => true };
    expect(actionApprover({ creator: narrowOwner, source: "chat", chat }, allowing)).toBeUndefined();
    expect(actionApprover({ creator: configOwner, source: "config", chat }, allowing)?.target).toEqual(chat);
  });

  it("attack: delivery to a chat the access rules refuse throws and posts nothing; a watch's owner chat is not re-judged", async () => {
    const { runner, sent } = rig(refusing);
    await expect(runner.deliver(from, { chat }, "hello")).rejects.toThrow(/not a chat Magpie may post to/);
    expect(sent).toEqual([]);
    await runner.deliver(from, { chat, recheck: false }, "edge");
    expect(sent).toEqual(["edge"]);
  });
});
