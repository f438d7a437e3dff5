import type { SlashCommand } from "../core/commands.js";
import type { ChatApprovalGate } from "./approval-gate.js";

function decisionCommand(gate: ChatApprovalGate, name: "approve" | "deny"): SlashCommand {
  return {
    name,
    description: name === "approve" ? "Approve a pending tool action" : "Deny a pending tool action",
    usage: `/${name} <id>`,
    run({ args, message }) {
      const id = args.split(/\s+/)[0]?.toLowerCase();
      if (!id) return `Usage: /${name} <id> — the id is shown in the approval request.`;
      const result = gate.decide(id, name === "approve" ? "approved" : "denied", {
        channel: message.channel,
        chatId: message.chatId,
        userId: message.userId,
        userName: message.userName,
      });
      if (!result.ok) return result.reason;
      return `${result.decision === "approved" ? "Approved" : "Denied"}: ${result.tool} (${result.id}).`;
    },
  };
}

/** `/approve <id>` and `/deny <id>`. */
export function approvalCommands(gate: ChatApprovalGate): SlashCommand[] {
  return [decisionCommand(gate, "approve"), decisionCommand(gate, "deny")];
}
