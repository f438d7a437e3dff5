import { approvalCommands } from "../security/approval-commands.js";
import { ChatApprovalGate } from "../security/approval-gate.js";
import { QuestionGate } from "../security/question-gate.js";
import type { MagpieFeature } from "./feature.js";

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
      clock: app.clock,
    });
    const questions = new QuestionGate({
      db: app.store.db,
      messenger: app.messenger,
      logger: app.logger,
      authority: () => app.authority(),
      clock: app.clock,
    });
    // Approvals and questions: one port the tool registry asks through.
    app.setApprovalGate({
      request: (request) => gate.request(request),
      ask: (request) => questions.ask(request),
    });
    app.addButtonHandler((press) => gate.handleButton(press));
    app.addButtonHandler((press) => questions.handleButton(press));
    app.addMessageInterceptor((message, sessionKey, sender) =>
      questions.answerFromMessage(message, sessionKey, sender),
    );
    app.commands.register(...approvalCommands(gate));
    app.services.approvals = gate;
    app.services.questions = questions;
  },
};
