import { html } from "hono/html";
import type { QuestionGate } from "../../security/question-gate.js";
import type { PageBody } from "../layout.js";

/** Open questions asked of an owner, each with its options and, when allowed, a free-text answer. */
export function questionsPart(questions: QuestionGate | undefined): PageBody {
  const open = (questions?.pending() ?? []).filter(({ request }) => request.askedOf.role === "owner");
  if (open.length === 0) return html`<p>No open questions.</p>`;
  return html`<table>
    <tr><th>Id</th><th>Question</th><th>Chat</th><th>Answer</th></tr>
    ${open.map(({ id, request }) => {
      const url = `/ui/questions/${id}/answer`;
      return html`<tr data-question="${id}">
        <td data-label="Id">${id}</td>
        <td data-label="Question">${request.prompt}</td>
        <td data-label="Chat">${request.target.channel}:${request.target.chatId}</td>
        <td data-label="Answer">
          ${request.options.map(
            (
              option,
              index,
            ) => html`<form method="post" action="${url}" hx-post="${url}" hx-target="#approvals" hx-swap="outerHTML">
              <input type="hidden" name="option" value="${index}" /><button type="submit">${option.label}</button>
            </form>`,
          )}
          ${
            request.allowCustom || request.options.length === 0
              ? html`<form method="post" action="${url}" hx-post="${url}" hx-target="#approvals" hx-swap="outerHTML">
                <input name="text" placeholder="${request.suggestedAnswer ?? "Your answer"}" required />
                <button type="submit">Answer</button>
              </form>`
              : ""
          }
        </td>
      </tr>`;
    })}
  </table>`;
}
