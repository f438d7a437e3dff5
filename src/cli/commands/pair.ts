import { CHANNEL_ENTRIES } from "../../../channels/catalog.js";
import { PairingStore } from "../../security/pairing.js";
import type { CliCommand } from "../cli-env.js";

const CHANNELS = CHANNEL_ENTRIES.filter((entry) => entry.pairing).map((entry) => entry.name);
const USAGE = `Usage: magpie pair <command>
  list [channel]                    pending pairing codes and approved senders
  approve <channel> <code>          let the sender who got <code> talk to the bot
  revoke <channel> <userId>         remove an approved sender`;

const age = (ms: number): string =>
  ms < 60_000 ? `${Math.round(ms / 1000)} s` : `${Math.round(ms / 60_000)} min`;

/** `magpie pair list|approve|revoke`: pairing of new chat users from the shell. */
export const run: CliCommand = async (argv, env) => {
  const [command, ...rest] = argv;
  if (!command || command === "--help" || command === "-h") {
    (command ? env.stdout : env.stderr).write(`${USAGE}\n`);
    return command ? 0 : 2;
  }
  const channel = rest[0];
  if (channel !== undefined && !CHANNELS.includes(channel)) {
    env.stderr.write(`Unknown channel "${channel}". Use one of: ${CHANNELS.join(", ")}.\n`);
    return 2;
  }
  if (command !== "list" && command !== "approve" && command !== "revoke") {
    env.stderr.write(`Unknown command "${command}".\n${USAGE}\n`);
    return 2;
  }
  if (command !== "list" && (!channel || !rest[1])) {
    env.stderr.write(`${USAGE}\n`);
    return 2;
  }
  const config = env.loadConfig();
  const store = env.openStore(config);
  try {
    const pairing = new PairingStore(store.db);
    if (command === "list") {
      const now = Date.now();
      const pending = pairing.pending(channel);
      const approved = pairing.approved(channel);
      env.stdout.write(pending.length === 0 ? "No pending pairing codes.\n" : "Pending pairing codes:\n");
      for (const entry of pending) {
        env.stdout.write(
          `  ${entry.code}  ${entry.channel}  user ${entry.userId}${entry.userName ? ` (${entry.userName})` : ""}  expires in ${age(entry.expiresAt - now)}\n`,
        );
      }
      env.stdout.write(approved.length === 0 ? "No approved senders.\n" : "Approved senders:\n");
      for (const sender of approved) {
        env.stdout.write(
          `  ${sender.channel}  user ${sender.userId}${sender.userName ? ` (${sender.userName})` : ""}  approved ${new Date(sender.approvedAt).toISOString()} by ${sender.approvedBy}\n`,
        );
      }
      return 0;
    }
    if (command === "revoke") {
      const removed = pairing.revoke(channel!, rest[1]!);
      (removed ? env.stdout : env.stderr).write(
        removed ? `Revoked ${channel} user ${rest[1]}.\n` : `${channel} user ${rest[1]} was not approved.\n`,
      );
      return removed ? 0 : 1;
    }
    const result = pairing.approve(channel!, rest[1]!, "cli");
    if (result.status === "approved") {
      const { pairing: entry } = result;
      env.stdout.write(
        `Approved ${entry.channel} user ${entry.userId}${entry.userName ? ` (${entry.userName})` : ""}. They can message the bot now.\n`,
      );
      return 0;
    }
    env.stderr.write(
      result.status === "expired"
        ? "That pairing code has expired. Ask the sender to message the bot again for a new one.\n"
        : `No pending ${channel} pairing code "${rest[1]}". Run: magpie pair list ${channel}\n`,
    );
    return 1;
  } finally {
    store.close();
  }
};
