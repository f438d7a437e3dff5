import { describe, expect, it } from "vitest";
import { Pacer } from "../../channels/format/pacer.js";
import { formattedOrPlain, type PartSender, sendParts } from "../../channels/send-parts.js";
import type { Button, ReplyTarget } from "../../src/core/types.js";
import { ChannelSendError } from "../../src/lib/errors.js";

const target: ReplyTarget = { channel: "test", chatId: "chat-1", replyToMessageId: "m-0" };
const LIMIT = 40;
/** Three parts at LIMIT: paragraphs of 30 characters each. */
const THREE_PARTS = ["a".repeat(30), "b".repeat(30), "c".repeat(30)].join("\n\n");
const BUTTONS: Button[][] = [[{ id: "yes", label: "Yes" }]];

type Call =
  | { kind: "edit"; messageId: string; text: string; markup?: string }
  | { kind: "post"; text: string; markup?: string; first: boolean; at: number };

/** A platform in memory: records every call; `failEdit` makes the next edit reject. */
function memoryPlatform(options: { pacer?: Pacer; now?: () => number } = {}) {
  const calls: Call[] = [];
  const markups: string[] = [];
  let failEdit: Error | null = null;
  let posted = 0;
  const sender: PartSender<string> = {
    limit: LIMIT,
    render: (text, format) => (format === "plain" ? text : `<${text}>`.slice(0, LIMIT)),
    pacer: options.pacer,
    markup: (buttons) => {
      const markup = buttons
        .flat()
        .map((button) => button.id)
        .join(",");
      markups.push(markup);
      return markup;
    },
    edit: async (messageId, part, markup) => {
      if (failEdit) {
        const error = failEdit;
        failEdit = null;
        throw error;
      }
      calls.push({ kind: "edit", messageId, text: part.formatted, markup });
    },
    post: async (part, markup, first) => {
      calls.push({ kind: "post", text: part.formatted, markup, first, at: options.now?.() ?? 0 });
      return `sent-${++posted}`;
    },
  };
  return {
    sender,
    calls,
    markups,
    failNextEdit: (error: Error) => {
      failEdit = error;
    },
  };
}

function recordedProgress(partsSent = 0) {
  const delivered: Array<[number, string]> = [];
  return {
    delivered,
    progress: { partsSent, onPartSent: (index: number, id: string) => delivered.push([index, id]) },
  };
}

describe("sendParts", () => {
  it("renders, chunks at the limit and posts every part; only the first answers the reply", async () => {
    const platform = memoryPlatform();
    const { delivered, progress } = recordedProgress();
    const result = await sendParts(target, { text: THREE_PARTS }, platform.sender, progress);
    expect(platform.calls.map((call) => [call.kind, call.text, "first" in call && call.first])).toEqual([
      ["post", `<${"a".repeat(30)}>`, true],
      ["post", `<${"b".repeat(30)}>`, false],
      ["post", `<${"c".repeat(30)}>`, false],
    ]);
    expect(result.messageIds).toEqual(["sent-1", "sent-2", "sent-3"]);
    expect(delivered).toEqual([
      [0, "sent-1"],
      [1, "sent-2"],
      [2, "sent-3"],
    ]);
  });

  it("passes a plain reply to the renderer as plain", async () => {
    const platform = memoryPlatform();
    await sendParts(target, { text: "**as is**", format: "plain" }, platform.sender);
    expect(platform.calls).toMatchObject([{ kind: "post", text: "**as is**" }]);
  });

  it("resumes after the parts already delivered", async () => {
    const platform = memoryPlatform();
    const { delivered, progress } = recordedProgress(2);
    const result = await sendParts(target, { text: THREE_PARTS }, platform.sender, progress);
    expect(platform.calls.map((call) => call.text)).toEqual([`<${"c".repeat(30)}>`]);
    expect(result.messageIds).toEqual(["sent-1"]);
    expect(delivered).toEqual([[2, "sent-1"]]);
  });

  it("puts the buttons on the last part only, made once", async () => {
    const platform = memoryPlatform();
    await sendParts(target, { text: THREE_PARTS, buttons: BUTTONS }, platform.sender);
    expect(platform.calls.map((call) => call.markup)).toEqual([undefined, undefined, "yes"]);
    expect(platform.markups).toEqual(["yes"]);
  });

  it("finalizes a streamed draft by editing it into the first part, then posts the rest", async () => {
    const platform = memoryPlatform();
    const { delivered, progress } = recordedProgress();
    const result = await sendParts(
      target,
      { text: THREE_PARTS, editMessageId: "draft-9" },
      platform.sender,
      progress,
    );
    expect(platform.calls.map((call) => call.kind)).toEqual(["edit", "post", "post"]);
    expect(platform.calls[0]).toMatchObject({ messageId: "draft-9", text: `<${"a".repeat(30)}>` });
    expect(platform.calls[1]).toMatchObject({ first: false });
    expect(result.messageIds).toEqual(["draft-9", "sent-1", "sent-2"]);
    expect(delivered[0]).toEqual([0, "draft-9"]);
  });

  it("edits the draft with the buttons when the reply fits in one part", async () => {
    const platform = memoryPlatform();
    await sendParts(target, { text: "short", buttons: BUTTONS, editMessageId: "draft-9" }, platform.sender);
    expect(platform.calls).toEqual([{ kind: "edit", messageId: "draft-9", text: "<short>", markup: "yes" }]);
  });

  it("sends the first part anew when the draft can no longer be edited", async () => {
    const platform = memoryPlatform();
    platform.failNextEdit(new ChannelSendError("message to edit not found", { permanent: true }));
    const result = await sendParts(
      target,
      { text: "short", buttons: BUTTONS, editMessageId: "draft-9" },
      platform.sender,
    );
    expect(platform.calls).toMatchObject([{ kind: "post", text: "<short>", markup: "yes", first: true }]);
    expect(platform.markups).toEqual(["yes"]);
    expect(result.messageIds).toEqual(["sent-1"]);
  });

  it("lets a transient edit failure through, so the outbox retries", async () => {
    const platform = memoryPlatform();
    const transient = new ChannelSendError("rate limited", { retryAfterMs: 1000 });
    platform.failNextEdit(transient);
    const { delivered, progress } = recordedProgress();
    await expect(
      sendParts(target, { text: "short", editMessageId: "draft-9" }, platform.sender, progress),
    ).rejects.toBe(transient);
    expect(platform.calls).toEqual([]);
    expect(delivered).toEqual([]);
  });

  it("does not edit the draft when resuming past the first part", async () => {
    const platform = memoryPlatform();
    const { progress } = recordedProgress(1);
    await sendParts(target, { text: THREE_PARTS, editMessageId: "draft-9" }, platform.sender, progress);
    expect(platform.calls.map((call) => call.kind)).toEqual(["post", "post"]);
  });

  it("paces new messages per chat but not the edit of the draft", async () => {
    let now = 0;
    const pacer = new Pacer({
      perChat: () => ({ max: 1, perMs: 1000 }),
      now: () => now,
      sleep: async (ms) => {
        now += ms;
      },
    });
    const platform = memoryPlatform({ pacer, now: () => now });
    await pacer.wait(target.chatId); // an earlier message to this chat, just now
    await sendParts(target, { text: THREE_PARTS, editMessageId: "draft-9" }, platform.sender);
    expect(platform.calls.map((call) => (call.kind === "post" ? call.at : "edit"))).toEqual([
      "edit",
      1000,
      2000,
    ]);
  });
});

describe("formattedOrPlain", () => {
  const isRejection = (error: unknown) => error instanceof Error && error.message === "bad markup";

  it("returns the formatted call's result when it succeeds", async () => {
    await expect(
      formattedOrPlain(
        async () => "formatted",
        async () => "plain",
        isRejection,
      ),
    ).resolves.toBe("formatted");
  });

  it("runs the plain call on a formatting rejection", async () => {
    await expect(
      formattedOrPlain(
        async () => {
          throw new Error("bad markup");
        },
        async () => "plain",
        isRejection,
      ),
    ).resolves.toBe("plain");
  });

  it("rethrows any other failure without trying plain text", async () => {
    let plainTried = false;
    await expect(
      formattedOrPlain(
        async () => {
          throw new Error("network down");
        },
        async () => {
          plainTried = true;
          return "plain";
        },
        isRejection,
      ),
    ).rejects.toThrow("network down");
    expect(plainTried).toBe(false);
  });
});
