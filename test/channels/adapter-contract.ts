import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { ChannelAdapter, ReplyTarget } from "../../src/core/types.js";
import { ChannelSendError, MagpieError } from "../../src/lib/errors.js";
import { waitFor } from "../fakes/http-util.js";
import { RecordingSink } from "./helpers.js";

/** A sent message as the fake platform saw it. */
export interface SentRecord {
  chatId: string;
  text: string;
  /** Platform id of the message this one replies to / threads under. */
  replyTo?: string;
  /** Whether the platform was asked to parse formatting. */
  formatted: boolean;
  buttons: string[];
}

/** What each adapter's test provides so the same contract runs against every platform fake. */
export interface ContractDriver {
  /** A new, unstarted adapter connected to the fake. */
  adapter(): ChannelAdapter;
  /** An adapter whose token the fake rejects. */
  adapterWithWrongToken(): ChannelAdapter;
  /** The env var a wrong-token error must name. */
  tokenEnvVar: string;
  maxMessageLength: number;
  /** How `**answer**` looks once rendered to the platform's dialect. */
  renderedBold: string;
  /** Contract cases this platform cannot exercise, with the reason (shown in the test name). */
  skips?: { formatting?: string; typing?: string; groups?: string; buttons?: string; edits?: string };
  /** Chat id (as Magpie sees it) of the DM with `userId`, and of the group used below. */
  directChatId: string;
  groupChatId: string;
  /** Injects a DM from the test user; resolves once the fake queued/sent it. */
  sendDirect(text: string): Promise<void>;
  sendGroup(text: string, options: { mention: boolean; fromBot?: boolean }): Promise<void>;
  /** Messages successfully delivered (failed attempts excluded), in order. */
  sent(): SentRecord[];
  failNextSend(kind: "rate-limit" | "formatting"): void;
  /** The next edit fails because the message is gone (a permanent refusal). */
  failNextEdit(): void;
  /** Presses the button with `buttonId` on the last sent message, as the test user. */
  pressButton(buttonId: string): Promise<void>;
  typingCount(): number;
  edits(): Array<{ messageId: string; text: string }>;
  /** Network loss: `true` drops every connection until called with `false`. */
  dropConnections(dropping: boolean): Promise<void>;
  close(): Promise<void>;
}

/** The one adapter contract (DESIGN.md "Channels"), run by every chat adapter's test. */
export function runAdapterContract(name: string, makeDriver: () => Promise<ContractDriver>): void {
  describe(`${name} adapter contract`, () => {
    let driver: ContractDriver;
    let adapter: ChannelAdapter;
    let sink: RecordingSink;

    beforeEach(async () => {
      driver = await makeDriver();
      adapter = driver.adapter();
      sink = new RecordingSink();
      await adapter.start(sink);
      await waitFor(() => adapter.status().state === "connected", `${name} connected`);
    });

    afterEach(async () => {
      await adapter.stop();
      await driver.close();
    });

    const dmTarget = (): ReplyTarget => ({ channel: name, chatId: driver.directChatId });

    it("normalizes a direct message", async () => {
      await driver.sendDirect("hello there");
      const inbound = await waitFor(() => sink.messages[0], "inbound DM");
      expect(inbound).toMatchObject({
        channel: name,
        chatId: driver.directChatId,
        text: "hello there",
        isDirect: true,
      });
      expect(inbound.userId).not.toBe("");
      expect(inbound.messageId).not.toBe("");
      expect(inbound.attachments).toEqual([]);
    });

    it("detects group messages and whether they mention the bot", async (context) => {
      if (driver.skips?.groups) {
        context.skip(`skipped: ${driver.skips.groups}`);
        return;
      }
      await driver.sendGroup("no mention here", { mention: false });
      await driver.sendGroup("hey bot", { mention: true });
      await waitFor(() => sink.messages.length >= 2 && sink.messages, "two group messages");
      const [plain, mentioned] = sink.messages;
      expect(plain).toMatchObject({ isDirect: false, mentionsBot: false, chatId: driver.groupChatId });
      expect(mentioned).toMatchObject({ isDirect: false, mentionsBot: true, chatId: driver.groupChatId });
    });

    it("ignores messages from bots", async () => {
      await driver.sendGroup("beep from another bot", { mention: true, fromBot: true });
      await driver.sendDirect("human marker");
      await waitFor(() => sink.messages.length > 0, "the human message");
      expect(sink.messages.map((message) => message.text)).toEqual(["human marker"]);
    });

    it("threads a reply to the triggering message", async () => {
      await driver.sendGroup("question", { mention: true });
      const inbound = await waitFor(() => sink.messages[0], "inbound");
      const result = await adapter.send(
        {
          channel: name,
          chatId: inbound.chatId,
          threadId: inbound.threadId,
          replyToMessageId: inbound.messageId,
        },
        { text: "**answer**" },
      );
      expect(result.messageIds).toHaveLength(1);
      const [sent] = driver.sent();
      expect(sent?.chatId).toBe(driver.groupChatId);
      expect(sent?.replyTo).toBeDefined();
      expect(sent?.formatted).toBe(true);
      expect(sent?.text).toContain(driver.renderedBold);
    });

    it("chunks a long reply at the platform limit without breaking a code block", async () => {
      const paragraph = "word ".repeat(60).trim();
      const code = `\`\`\`js\n${"console.log('x');\n".repeat(Math.ceil(driver.maxMessageLength / 18))}\`\`\``;
      const text = `${Array.from({ length: Math.ceil(driver.maxMessageLength / 300) }, () => paragraph).join("\n\n")}\n\n${code}\n\ntail end`;
      const progress: number[] = [];
      const result = await adapter.send(
        dmTarget(),
        { text },
        { partsSent: 0, onPartSent: (index) => progress.push(index) },
      );
      const sent = driver.sent();
      expect(sent.length).toBeGreaterThan(2);
      expect(result.messageIds).toHaveLength(sent.length);
      expect(progress).toEqual(sent.map((_, index) => index));
      for (const part of sent) expect(part.text.length).toBeLessThanOrEqual(driver.maxMessageLength);
      expect(sent.at(-1)?.text).toContain("tail end");
      const joined = sent.map((part) => part.text).join("\n");
      expect(joined.match(/console\.log/g)?.length).toBe(Math.ceil(driver.maxMessageLength / 18));
    });

    it("resumes a multi-part send after the parts already delivered", async () => {
      const text = Array.from(
        { length: 3 },
        (_, index) => `part${index} ${"x".repeat(driver.maxMessageLength - 100)}`,
      ).join("\n\n");
      await adapter.send(dmTarget(), { text }, { partsSent: 1, onPartSent: () => undefined });
      const texts = driver.sent().map((part) => part.text);
      expect(texts.some((part) => part.includes("part0"))).toBe(false);
      expect(texts.some((part) => part.includes("part1"))).toBe(true);
      expect(texts.some((part) => part.includes("part2"))).toBe(true);
    });

    it("turns a 429 into a ChannelSendError with retryAfterMs, and a resumed retry delivers each part once", async () => {
      driver.failNextSend("rate-limit");
      const text = `first ${"a".repeat(driver.maxMessageLength - 50)}\n\nsecond part`;
      let partsSent = 0;
      const progress = { partsSent, onPartSent: (index: number) => (partsSent = index + 1) };
      const failure = await adapter.send(dmTarget(), { text }, progress).catch((error: unknown) => error);
      if (failure instanceof ChannelSendError) {
        expect(failure.retryAfterMs).toBeGreaterThan(0);
        expect(failure.permanent).toBe(false);
        await adapter.send(dmTarget(), { text }, { partsSent, onPartSent: progress.onPartSent });
      } else {
        // The library retried the 429 itself (discord.js queues behind retry_after): still exactly once.
        expect(failure).toMatchObject({ messageIds: expect.any(Array) });
      }
      const texts = driver.sent().map((part) => part.text);
      expect(texts.filter((part) => part.includes("first"))).toHaveLength(1);
      expect(texts.filter((part) => part.includes("second part"))).toHaveLength(1);
    });

    it("falls back to plain text when the platform rejects the formatting", async (context) => {
      if (driver.skips?.formatting) {
        context.skip(`skipped: ${driver.skips.formatting}`);
        return;
      }
      driver.failNextSend("formatting");
      await adapter.send(dmTarget(), { text: "some *styled* text" });
      const sent = driver.sent();
      expect(sent).toHaveLength(1);
      expect(sent[0]?.formatted).toBe(false);
      expect(sent[0]?.text).toContain("styled");
    });

    it("sends buttons and reports a press to the sink", async (context) => {
      if (driver.skips?.buttons) {
        context.skip(`skipped: ${driver.skips.buttons}`);
        return;
      }
      await adapter.send(dmTarget(), {
        text: "Approve?",
        buttons: [
          [
            { id: "approve:1", label: "Approve" },
            { id: "deny:1", label: "Deny" },
          ],
        ],
      });
      expect(driver.sent()[0]?.buttons).toEqual(["approve:1", "deny:1"]);
      await driver.pressButton("deny:1");
      const press = await waitFor(() => sink.presses[0], "button press");
      expect(press).toMatchObject({
        channel: name,
        buttonId: "deny:1",
        chatId: driver.directChatId,
        isDirect: true,
      });
    });

    it("shows a typing indicator", async (context) => {
      if (driver.skips?.typing) {
        context.skip(`skipped: ${driver.skips.typing}`);
        return;
      }
      expect(adapter.capabilities.typing).toBe(true);
      await adapter.typing!(dmTarget());
      await waitFor(() => driver.typingCount() > 0, "typing call");
    });

    it("edits a sent message", async (context) => {
      if (driver.skips?.edits) {
        context.skip(`skipped: ${driver.skips.edits}`);
        return;
      }
      expect(adapter.edit).toBeDefined();
      const { messageIds } = await adapter.send(dmTarget(), { text: "draft" });
      await adapter.edit!(dmTarget(), messageIds[0]!, { text: "final **text**" });
      const [edit] = driver.edits();
      expect(edit?.messageId).toBe(messageIds[0]);
      expect(edit?.text).toContain("final");
    });

    it("finalizes a streamed draft by editing it instead of sending anew", async (context) => {
      if (driver.skips?.edits) {
        context.skip(`skipped: ${driver.skips.edits}`);
        return;
      }
      const { messageIds } = await adapter.send(dmTarget(), { text: "draft…" });
      const result = await adapter.send(dmTarget(), {
        text: "the final answer",
        editMessageId: messageIds[0],
      });
      expect(result.messageIds[0]).toBe(messageIds[0]);
      expect(driver.sent()).toHaveLength(1);
      expect(driver.edits().at(-1)?.text).toContain("the final answer");
    });

    it("sends anew when the draft to finalize can no longer be edited", async () => {
      const { messageIds } = await adapter.send(dmTarget(), { text: "draft…" });
      driver.failNextEdit();
      const result = await adapter.send(dmTarget(), {
        text: "the final answer",
        editMessageId: messageIds[0],
      });
      expect(result.messageIds[0]).not.toBe(messageIds[0]);
      expect(driver.sent().map((sent) => sent.text)).toEqual(["draft…", "the final answer"]);
    });

    it("refuses a wrong token at start-up with an error naming the key", async () => {
      const wrong = driver.adapterWithWrongToken();
      const error = await wrong.start(new RecordingSink()).catch((caught: unknown) => caught);
      expect(error).toBeInstanceOf(MagpieError);
      expect((error as Error).message).toContain(driver.tokenEnvVar);
      expect(wrong.status().state).toBe("failed");
      await wrong.stop();
    });

    // A reconnect waits out the adapter's back-off (e-mail: up to 30 s between tries while the server is down), and
    // stopping and starting a real server (Dovecot) takes seconds on a loaded machine: the suite's 20 s per test was
    // too short for all of it, and the test failed under load while the reconnect itself worked.
    it("reconnects after network loss", async () => {
      await driver.dropConnections(true);
      await waitFor(() => adapter.status().state === "reconnecting", "reconnecting state", 10_000);
      await driver.dropConnections(false);
      await waitFor(() => adapter.status().state === "connected", "connected again", 40_000);
      await driver.sendDirect("after the outage");
      await waitFor(
        () => sink.messages.find((message) => message.text === "after the outage"),
        "message after reconnect",
        10_000,
      );
    }, 75_000);

    it("starts while the platform is unreachable and connects once it is back", async () => {
      await driver.dropConnections(true);
      const late = driver.adapter();
      const lateSink = new RecordingSink();
      try {
        await late.start(lateSink);
        expect(late.status().state).toBe("reconnecting");
        expect(late.status().detail).toBeTruthy();
        await driver.dropConnections(false);
        await waitFor(() => late.status().state === "connected", "connected after the outage", 40_000);
        await adapter.stop();
        await driver.sendDirect("first words");
        await waitFor(
          () => lateSink.messages.find((message) => message.text === "first words"),
          "message",
          10_000,
        );
      } finally {
        await late.stop();
      }
    }, 75_000);

    it("reports stopped after stop()", async () => {
      await adapter.stop();
      expect(adapter.status().state).toBe("stopped");
    });
  });
}
