/**
 * The floor the start-up bench compares Magpie with: the smallest Telegram bot that does the same round trip —
 * long-poll `getUpdates`, ask an OpenAI-compatible `/chat/completions`, `sendMessage` the answer — with no
 * libraries (Node's own `fetch` and `http`), no database, no tools, no memory. It serves `GET /readyz` once its
 * first poll is under way, like Magpie. Run: `node reference-bot.js <port> <telegramApiRoot> <token> <llmUrl>`.
 */
import { createServer } from "node:http";

const [port, apiRoot, token, llmUrl] = process.argv.slice(2);
let ready = false;
createServer((request, response) => {
  response.writeHead(request.url === "/readyz" && ready ? 200 : 503).end();
}).listen(Number(port), "127.0.0.1");

interface Update {
  update_id: number;
  message?: { text?: string; chat: { id: number } };
}

async function telegram(method: string, body: unknown): Promise<unknown> {
  const response = await fetch(`${apiRoot}/bot${token}/${method}`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  return ((await response.json()) as { result: unknown }).result;
}

async function answer(text: string): Promise<string> {
  const response = await fetch(`${llmUrl}/chat/completions`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: "Bearer sk-test" },
    body: JSON.stringify({ model: "test-model", messages: [{ role: "user", content: text }] }),
  });
  const completion = (await response.json()) as { choices: Array<{ message: { content: string } }> };
  return completion.choices[0]!.message.content;
}

await telegram("getMe", {});
let offset = 0;
for (;;) {
  const polled = telegram("getUpdates", { offset, timeout: 30 });
  ready = true;
  for (const update of (await polled) as Update[]) {
    offset = update.update_id + 1;
    if (!update.message?.text) continue;
    const reply = await answer(update.message.text);
    await telegram("sendMessage", { chat_id: update.message.chat.id, text: reply });
  }
}
