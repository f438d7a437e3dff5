import { z } from "zod";
import type {
  Attachment,
  Button,
  InboundMessage,
  MessageOutcome,
  OutboundMessage,
} from "./message-records.js";

/**
 * The shapes of the messages the inbox and outbox keep as JSON, checked when read back instead of cast. Each is
 * declared against the core's type, so a field added there and not here fails the type check. Loose objects: a
 * row written by a newer release with an extra field still reads.
 */
const attachmentSchema: z.ZodType<Attachment> = z.looseObject({
  kind: z.enum(["image", "audio", "voice", "video", "file", "sticker"]),
  id: z.string(),
  name: z.string().optional(),
  mime: z.string().optional(),
  size: z.number().optional(),
  url: z.string().optional(),
});

export const inboundMessageSchema: z.ZodType<InboundMessage> = z.looseObject({
  channel: z.string(),
  chatId: z.string(),
  threadId: z.string().optional(),
  guildId: z.string().optional(),
  messageId: z.string(),
  userId: z.string(),
  userName: z.string(),
  text: z.string(),
  isDirect: z.boolean(),
  mentionsBot: z.boolean(),
  replyTo: z
    .looseObject({
      messageId: z.string(),
      userId: z.string().optional(),
      text: z.string().optional(),
      fromBot: z.boolean().optional(),
    })
    .optional(),
  attachments: z.array(attachmentSchema),
  receivedAt: z.number(),
  raw: z.unknown().optional(),
  note: z
    .looseObject({
      origin: z.enum(["spawn", "event"]),
      label: z.string().optional(),
      budget: z.object({ sessionKey: z.string(), turnId: z.string() }).optional(),
      untrusted: z.boolean().optional(),
    })
    .optional(),
});

const buttonSchema: z.ZodType<Button> = z.looseObject({
  id: z.string(),
  label: z.string(),
  style: z.enum(["primary", "danger"]).optional(),
});

export const outboundMessageSchema: z.ZodType<OutboundMessage> = z.looseObject({
  text: z.string(),
  buttons: z.array(z.array(buttonSchema)).optional(),
  format: z.enum(["markdown", "plain"]).optional(),
  editMessageId: z.string().optional(),
  file: z
    .looseObject({
      path: z.string(),
      name: z.string(),
      kind: z.enum(["photo", "document", "voice"]),
      mime: z.string().optional(),
    })
    .optional(),
});

/** The platform message ids an outbox row has collected (one per part sent). */
export const messageIdsSchema = z.array(z.string());

/** A message's outcome as stored (inbox and trace). */
export const messageOutcomeSchema: z.ZodType<MessageOutcome> = z.enum([
  "answered",
  "failed",
  "interrupted",
  "refused",
  "undeliverable",
]);
