import type { MagpieFeature } from "../app/feature.js";
import { approvalCommands } from "./approval-commands.js";
import { ChatApprovalGate } from "./approval-gate.js";

/** Approvals in chat: the gate (buttons + /approve, /deny), wired into the tool registry's approval port. */
export const securityFeature: MagpieFeature = {
  name: "security",
  setup(app) {
    const gate = new ChatApprovalGate({
      store: app.store,
      messenger: app.messenger,
      logger: app.logger,
      redactor: app.redactor,
      authority: () => app.authority(),
    });
    app.setApprovalGate(gate);
    app.addButtonHandler((press) => gate.handleButton(press));
    app.commands.register(...approvalCommands(gate));
    app.services.approvals = gate;
  },
};
