import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import type { Messenger } from "../../src/core/messenger.js";
import type { InboundMessage, OutboundMessage, ReplyTarget } from "../../src/core/types.js";
import { silentLogger } from "../../src/log/logger.js";
import { Redactor } from "../../src/log/redact.js";
import { approvalCommands } from "../../src/security/approval-commands.js";
import { ChatApprovalGate } from "../../src/security/approval-gate.js";
import { Store } from "../../src/store/index.js";

class RecordingMessenger implements Messenger {
  readonly sent: Array<{ target: ReplyTarget; message: OutboundMessage; origin?: string }> = [];
  send(target: ReplyTarget, message: OutboundMessage, origin?: string): number {
    this.sent.push({ target, message, origin });
    return this.sent.length;
  }
  async waitForDelivery(): Promise<"sent"> {
    return "sent";
  }
}

const target: ReplyTarget = { channel: "telegram", chatId: "42" };
const owner = { channel: "telegram", chatId: "42", userId: "7", userName: "Owner" };
const guest = { channel: "telegram", chatId: "42", userId: "2002", userName: "User2002" };
/** User 7 is the owner; everyone else (user 2002, a group member) is a guest. */
const authority = {
  roleOf: (_channel: string, userId: string) => (userId === "7" ? ("owner" as const) : ("guest" as const)),
  mayDeliver: () => true,
};

let store: Store;
let messenger: RecordingMessenger;
let gate: ChatApprovalGate;
beforeEach(() => {
  store = Store.open(":memory:");
  messenger = new RecordingMessenger();
  gate = new ChatApprovalGate({
    store,
    messenger,
    logger: silentLogger(),
    redactor: new Redactor().add("sk-live-SECRET-123"),
    authority: () => authority,
  });
});
afterEach(() => {
  vi.useRealTimers();
  store.close();
});

const ask = (action = "shell rm -rf build/", timeoutMs = 60_000, signal?: AbortSignal) =>
  gate.request({
    sessionKey: "telegram:42",
    target,
    approver: { channel: "telegram", userId: "42", role: "owner" },
    tool: "shell",
    action,
    reason: "risk:high",
    timeoutMs,
    signal,
  });

function requestId(): string {
  const buttons = messenger.sent.at(-1)!.message.buttons!;
  return buttons[0]![0]!.id.split(":")[1]!;
}

function command(name: "approve" | "deny", args: string, from: Partial<InboundMessage> = {}) {
  const slash = approvalCommands(gate).find((entry) => entry.name === name)!;
  const message: InboundMessage = {
    channel: "telegram",
    chatId: "42",
    messageId: "m1",
    userId: "7",
    userName: "Owner",
    text: `/${name} ${args}`,
    isDirect: true,
    mentionsBot: false,
    attachments: [],
    receivedAt: Date.now(),
    ...from,
  };
  return slash.run({
    message,
    sender: { channel: message.channel, userId: message.userId, role: "owner" },
    sessionKey: "telegram:42",
    args,
    target,
  });
}

describe("ChatApprovalGate", () => {
  it("shows the exact action with Approve/Deny buttons and resolves on the Approve button", async () => {
    const decision = ask("shell curl -H 'Authorization: sk-live-SECRET-123' https://api.example.com");
    const sent = messenger.sent[0]!;
    expect(sent.target).toEqual(target);
    expect(sent.origin).toBe("approval");
    const id = requestId();
    expect(sent.message.text).toContain("shell curl -H 'Authorization: [REDACTED]' https://api.example.com");
    expect(sent.message.text).not.toContain("sk-live-SECRET-123");
    expect(sent.message.text).toContain(`/approve ${id}`);
    expect(sent.message.buttons).toEqual([
      [
        { id: `approve:${id}`, label: "Approve", style: "primary" },
        { id: `deny:${id}`, label: "Deny", style: "danger" },
      ],
    ]);
    expect(gate.handleButton({ ...owner, isDirect: true, buttonId: `approve:${id}` })).toBe(true);
    await expect(decision).resolves.toBe("approved");
    expect(gate.repository.get(id)).toMatchObject({
      status: "approved",
      decidedBy: "7 (Owner)",
      tool: "shell",
    });
    const audit = store.audit.recent(1)[0]!;
    expect(audit).toMatchObject({
      tool: "approval",
      verdict: "approved",
      outcome: "ok",
      sessionKey: "telegram:42",
    });
    expect(audit.arguments).toContain(id);
    expect(messenger.sent.at(-1)!.message.text).toContain("Approved: shell");
  });

  it("a guest's Approve press and /approve are refused and audited; the owner still decides", async () => {
    const pending = ask("shell rm -rf build/");
    const id = requestId();
    expect(gate.handleButton({ ...guest, isDirect: false, buttonId: `approve:${id}` })).toBe(true);
    expect(messenger.sent.at(-1)?.message.text).toMatch(/Only an owner/);
    expect(await command("approve", id, { userId: guest.userId, userName: guest.userName })).toMatch(
      /Only an owner/,
    );
    expect(gate.pendingCount).toBe(1);
    const refusals = store.audit
      .recent(10, "approval")
      .filter((entry) => entry.errorCode === "approval.not_owner");
    expect(refusals).toHaveLength(2);
    expect(refusals[0]!.arguments).toContain("telegram:2002");
    gate.handleButton({ ...owner, isDirect: false, buttonId: `deny:${id}` });
    expect(await pending).toBe("denied");
    expect(gate.repository.get(id)?.decidedBy).toContain("7");
  });

  it("shows bidirectional and zero-width characters in the action as visible markers", async () => {
    void ask("echo safe\u202E;txt.exe\u200B rm -rf ~");
    const text = messenger.sent.at(-1)!.message.text;
    expect(text).toContain("⟦U+202E⟧");
    expect(text).toContain("⟦U+200B⟧");
    expect(text).not.toMatch(/[\u202E\u200B]/);
  });

  it("/deny <id> denies; a second decision is refused", async () => {
    const decision = ask();
    const id = requestId();
    expect(await command("deny", id)).toBe(`Denied: shell (${id}).`);
    await expect(decision).resolves.toBe("denied");
    expect(await command("approve", id)).toContain("already denied");
    expect(store.audit.recent(1)[0]).toMatchObject({
      tool: "approval",
      verdict: "denied-by-user",
      outcome: "denied",
    });
  });

  it("/approve <id> approves (case-insensitive id)", async () => {
    const decision = ask();
    const id = requestId();
    expect(await command("approve", id.toUpperCase())).toBe(`Approved: shell (${id}).`);
    await expect(decision).resolves.toBe("approved");
  });

  it("times out as a denial", async () => {
    vi.useFakeTimers();
    const decision = ask("shell reboot", 300_000);
    const id = requestId();
    await vi.advanceTimersByTimeAsync(299_999);
    expect(gate.pendingCount).toBe(1);
    await vi.advanceTimersByTimeAsync(1);
    await expect(decision).resolves.toBe("timeout");
    expect(gate.repository.get(id)!.status).toBe("timeout");
    expect(await command("approve", id)).toContain("already timeout");
    expect(store.audit.recent(1)[0]).toMatchObject({
      tool: "approval",
      verdict: "timeout",
      outcome: "denied",
    });
  });

  it("refuses decisions from another chat and unknown ids; ignores foreign buttons", async () => {
    const decision = ask();
    const id = requestId();
    expect(await command("approve", id, { chatId: "999" })).toContain("belongs to another chat");
    expect(
      gate.handleButton({ ...owner, channel: "discord", isDirect: true, buttonId: `approve:${id}` }),
    ).toBe(true);
    expect(gate.pendingCount).toBe(1);
    expect(await command("approve", "deadbeef")).toContain("no approval request deadbeef");
    expect(await command("approve", "")).toContain("Usage: /approve <id>");
    expect(gate.handleButton({ ...owner, isDirect: true, buttonId: "choice:yes" })).toBe(false);
    gate.decide(id, "denied", owner);
    await expect(decision).resolves.toBe("denied");
  });

  it("a cancelled turn (abort signal) ends the request as denied", async () => {
    const controller = new AbortController();
    const decision = ask("shell sleep 100", 60_000, controller.signal);
    const id = requestId();
    controller.abort();
    await expect(decision).resolves.toBe("denied");
    expect(gate.repository.get(id)!.status).toBe("cancelled");
  });

  it("requests left pending by a previous process are expired at startup", () => {
    gate.repository.insert({
      id: "abc12345",
      sessionKey: "s",
      channel: "telegram",
      chatId: "42",
      tool: "shell",
      action: "x",
      reason: "risk:high",
      requestedAt: 1,
      expiresAt: 2,
    });
    const restarted = new ChatApprovalGate({
      store,
      messenger,
      logger: silentLogger(),
      redactor: new Redactor(),
      authority: () => authority,
    });
    expect(restarted.repository.get("abc12345")!.status).toBe("timeout");
  });
});
