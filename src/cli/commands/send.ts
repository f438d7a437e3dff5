import { CHAT_CHANNEL_NAMES } from "../../../channels/catalog.js";
import type { CliCommand } from "../cli-env.js";

const WAIT_MS = 15_000;

/**
 * `magpie send <channel> <chatId> <text>`: puts a message into the durable outbox. A running Magpie delivers it
 * within seconds (its outbox worker polls); otherwise it goes out at the next start.
 */
export const run: CliCommand = async (argv, env) => {
  const [channel, chatId, ...words] = argv;
  const text = words.join(" ").trim();
  if (!channel || !chatId || !text) {
    env.stderr.write("Usage: magpie send <channel> <chatId> <text>\n");
    return 2;
  }
  const config = env.loadConfig();
  const known = [...CHAT_CHANNEL_NAMES, "console"];
  if (!known.includes(channel)) {
    env.stderr.write(`Unknown channel "${channel}". Use one of: ${known.join(", ")}.\n`);
    return 2;
  }
  const store = env.openStore(config);
  try {
    const id = store.outbox.enqueue({ channel, chatId }, { text }, { origin: "message" });
    const deadline = Date.now() + WAIT_MS;
    while (Date.now() < deadline) {
      const item = store.outbox.get(id);
      if (item?.status === "sent") {
        env.stdout.write(`✓ Sent to ${channel}:${chatId} (message ${item.platformMessageIds.join(", ")}).\n`);
        return 0;
      }
      if (item?.status === "failed") {
        env.stderr.write(`✗ Delivery to ${channel}:${chatId} failed: ${item.lastError}\n`);
        return 1;
      }
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
    env.stdout.write(
      `Queued as outbox #${id}. No running Magpie delivered it within ${WAIT_MS / 1000} s; it will be sent when Magpie runs.\n`,
    );
    return 0;
  } finally {
    store.close();
  }
};
