import { approvalCommands } from "../security/approval-commands.js";
import { ChatApprovalGate } from "../security/approval-gate.js";
import { QuestionGate } from "../security/question-gate.js";
import type { MagpieFeature } from "./feature.js";

/** Approvals in chat: the gate (buttons + /approve, /deny), wired into the tool registry's approval port. */
export const securityFeature: MagpieFeature = {
  name: "security",
  provides: ["approvals"],
  uses: ["authority"],
  setup(_config, app) {
    const gate = new ChatApprovalGate({
      store: app.store,
      messenger: app.messenger,
      logger: app.logger,
      redactor: app.services.redactor,
      authority: () => app.ports.authority(),
      clock: app.clock,
    });
    const questions = new QuestionGate({
      db: app.store.db,
      messenger: app.messenger,
      logger: app.logger,
      authority: () => app.ports.authority(),
      clock: app.clock,
    });
    app.services.approvals = gate;
    app.services.questions = questions;
    return {
      commands: approvalCommands(gate),
      // Approvals and questions: one port the tool registry asks through.
      approvals: {
        request: (request) => gate.request(request),
        ask: (request) => questions.ask(request),
      },
      buttonHandlers: [(press) => gate.handleButton(press), (press) => questions.handleButton(press)],
      interceptors: [
        (message, sessionKey, sender) => questions.answerFromMessage(message, sessionKey, sender),
      ],
    };
  },
};
