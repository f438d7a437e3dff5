import { html } from "hono/html";
import type { QuestionRequest } from "../../core/approvals.js";
import type { ApprovalRecord } from "../../security/approval-store.js";
import type { Db } from "../../store/database.js";
import { approvalCard, askerOf, decisionButton } from "../approval-card.js";
import type { PageBody } from "../layout.js";

/**
 * The buttons post to the approvals page's routes (one place decides); htmx puts that page's notice into the
 * home's `#home-notice` and the change feed then refreshes the list. Without JavaScript the forms still work and
 * land on the approvals page.
 */
const SWAP = html`hx-target="#home-notice" hx-select="[role=status]" hx-swap="innerHTML"`;

/** The approval card's Approve / Deny, posting to the approvals page's routes with the home's swap. */
function homeDecisionButton(decision: "approve" | "deny", label: string, record: ApprovalRecord): PageBody {
  const url = `/ui/approvals/${record.id}/${decision}`;
  return html`<form method="post" action="${url}" hx-post="${url}" ${SWAP}>
    ${decisionButton(decision, label, record)}
  </form>`;
}

function questionItem(id: string, request: QuestionRequest): PageBody {
  const url = `/ui/questions/${id}/answer`;
  return html`<li data-question="${id}">
    <b>${request.prompt}</b> <small>in ${request.target.channel}:${request.target.chatId}</small>
    <div class="actions">
      ${request.options.map(
        (option, index) => html`<form method="post" action="${url}" hx-post="${url}" ${SWAP}>
          <input type="hidden" name="option" value="${index}" /><button type="submit">${option.label}</button>
        </form>`,
      )}
      ${
        request.allowCustom || request.options.length === 0
          ? html`<form method="post" action="${url}" hx-post="${url}" ${SWAP} class="actions">
            <input id="home-answer-${id}" hx-preserve="true" name="text" aria-label="Your answer to: ${request.prompt}"
              placeholder="${request.suggestedAnswer ?? "Your answer"}" required />
            <button type="submit">Answer</button>
          </form>`
          : ""
      }
    </div>
  </li>`;
}

/** Approvals (as the approvals page's cards) and owner questions waiting for an answer, with their buttons. */
export function pendingCard(
  approvals: ApprovalRecord[],
  questions: Array<{ id: string; request: QuestionRequest }>,
  view: { db: Db; timezone: string; now: number },
): PageBody {
  const count = approvals.length + questions.length;
  return html`<section class="card${count > 0 ? " wide" : ""}" aria-labelledby="home-pending">
    <h2 id="home-pending">Waiting for you${count > 0 ? html` <span class="badge warn">${count}</span>` : ""}</h2>
    ${
      count === 0
        ? html`<p>No approvals or questions are waiting.</p>`
        : html`<ul class="list">
          ${approvals.map(
            (record) =>
              html`<li>${approvalCard(
                { record, askedBy: askerOf(view.db, record), timezone: view.timezone, now: view.now },
                homeDecisionButton,
              )}</li>`,
          )}
          ${questions.map(({ id, request }) => questionItem(id, request))}
        </ul>`
    }
  </section>`;
}
