import { z } from "zod";
import type { MagpieConfig } from "../config/schema.js";
import type { ReplyTarget } from "../core/types.js";
import { row } from "../lib/row.js";
import { createPhoneNotifier } from "../notify/phone.js";
import { Authority } from "../security/authority.js";
import { PairingStore } from "../security/pairing.js";
import { Store } from "../store/index.js";

const ownerChats = row(z.object({ channel: z.string(), chat_id: z.string(), user_id: z.string() }), "notice");

/**
 * Tells the owner what an upgrade did: a notice in the outbox to the owner's first direct chat (the running — or
 * next started — Magpie delivers it) and every configured phone provider (Pushover, ntfy). Resolves to where it
 * went; never throws (the upgrade's own output says the same).
 */
export async function tellOwner(config: MagpieConfig, title: string, text: string): Promise<string[]> {
  const told: string[] = [];
  try {
    const store = Store.open(config.dataDir);
    try {
      const target = ownerDirectChat(config, store);
      if (target) {
        store.outbox.enqueue(target, { text: `${title}: ${text}`, format: "plain" }, { origin: "notice" });
        told.push(`${target.channel} chat ${target.chatId}`);
      }
    } finally {
      store.close();
    }
  } catch {
    // The database may be what failed; the phone and the terminal still hear of it.
  }
  const phone = createPhoneNotifier(config.notify);
  if (phone.configured) {
    try {
      await phone.send({ title, message: text, priority: 1 });
      told.push("phone notification");
    } catch {
      // Said in the upgrade's output instead.
    }
  }
  return told;
}

/** The oldest direct chat in which an owner wrote to the bot. */
function ownerDirectChat(config: MagpieConfig, store: Store): ReplyTarget | null {
  const authority = new Authority(config, new PairingStore(store.db), store.db);
  const rows = ownerChats.all(
    store.db
      .prepare(
        `SELECT channel, json_extract(payload, '$.chatId') AS chat_id, json_extract(payload, '$.userId') AS user_id
       FROM inbox WHERE json_extract(payload, '$.isDirect') = 1 AND channel != 'console'
       GROUP BY channel, chat_id ORDER BY MIN(id) LIMIT 50`,
      )
      .all(),
  );
  const found = rows.find((row) => authority.roleOf(row.channel, row.user_id) === "owner");
  return found ? { channel: found.channel, chatId: found.chat_id } : null;
}
