import { existsSync } from "node:fs";
import fs from "node:fs/promises";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { securityFeature } from "../../src/app/security-feature.js";
import { waitFor } from "../fakes/http-util.js";
import { type ChatRequestBody, reply } from "../fakes/openai.js";
import { startTestApp, type TestApp } from "../helpers/harness.js";

/**
 * Approvals are counted per turn, not per call (DESIGN.md → Security): the files a turn's patches delete add up
 * against `file.apply_patch_delete_many`, so a mass deletion split into small patches asks once for the whole; and
 * what the owner denied in a turn is refused without asking again when the model repeats it in pieces.
 */

let running: TestApp | null = null;
afterEach(async () => {
  await running?.stop();
  running = null;
});

const FILES = ["a", "b", "c", "d", "e", "f"].map((name) => `${name}.txt`);

async function start(): Promise<TestApp> {
  // The default security.approvals.require (guard:warn) and security.level (medium): a mass deletion is a Warn.
  running = await startTestApp({
    features: [securityFeature],
    config: { security: { approvals: { timeoutSecs: 30 } } },
  });
  await fs.mkdir(running.config.workspace, { recursive: true });
  for (const file of FILES) await fs.writeFile(path.join(running.config.workspace, file), `${file}\n`);
  return running;
}

/** A unified diff deleting each file (their content is their own name and a newline). */
const deletionPatch = (files: string[]) =>
  `${files.map((file) => `--- a/${file}\n+++ /dev/null\n@@ -1,1 +0,0 @@\n-${file}\n`).join("")}`;

const patchCall = (files: string[]) => ({ name: "apply_patch", arguments: { patch: deletionPatch(files) } });

interface ToolResult {
  ok?: boolean;
  refused?: boolean;
  error?: { code: string; message: string };
}

function toolResults(body: ChatRequestBody): Array<ToolResult | string> {
  return body.messages
    .filter((message) => message.role === "tool")
    .map((message) => {
      try {
        return JSON.parse(String(message.content)) as ToolResult;
      } catch {
        return String(message.content);
      }
    });
}

const prompts = (app: TestApp) =>
  app.channel!.sent.filter((entry) => entry.message.text.includes("Approval needed"));

const present = (app: TestApp) => FILES.filter((file) => existsSync(path.join(app.config.workspace, file)));

describe("approvals counted per turn", () => {
  it("a 6-file deletion the owner denied, then repeated as two 3-file patches: refused without asking, nothing deleted", async () => {
    const app = await start();
    let repeats: Array<ToolResult | string> = [];
    app.llm!.script(
      reply.toolCalls([patchCall(FILES)]),
      reply.toolCalls([patchCall(FILES.slice(0, 3)), patchCall(FILES.slice(3))], (body) => {
        expect(toolResults(body).at(-1)).toMatchObject({ ok: false, error: { code: "approval.denied" } });
      }),
      reply.text("I won't delete them.", (body) => {
        repeats = toolResults(body).slice(-2);
      }),
    );
    await app.channel!.receive("clean up the text files");
    const [prompt] = await waitFor(() => (prompts(app).length > 0 ? prompts(app) : undefined), "the prompt");
    expect(prompt!.message.text).toContain("file.apply_patch_delete_many");
    const id = prompt!.message.buttons![0]![1]!.id.split(":")[1]!;
    await app.channel!.receive(`/deny ${id}`);
    await waitFor(() => app.channel!.texts().includes("I won't delete them."), "the turn's end");
    app.llm!.assertDone();

    expect(repeats).toEqual([
      expect.objectContaining({
        ok: false,
        refused: true,
        error: expect.objectContaining({ code: "approval.denied_earlier" }),
      }),
      expect.objectContaining({
        ok: false,
        refused: true,
        error: expect.objectContaining({ code: "approval.denied_earlier" }),
      }),
    ]);
    expect((repeats[0] as ToolResult).error!.message).toContain("not asked about again");
    // One prompt, one decision: the split repeat was never put to the owner.
    expect(prompts(app)).toHaveLength(1);
    expect(app.app.store.db.prepare("SELECT id, status FROM approvals").all()).toEqual([
      { id, status: "denied" },
    ]);
    expect(present(app)).toEqual(FILES);
    const audit = app.app.store.db
      .prepare("SELECT verdict, error_code AS code FROM audit WHERE tool = 'apply_patch' ORDER BY id")
      .all();
    expect(audit).toEqual([
      { verdict: "denied-by-user", code: "approval.denied" },
      { verdict: "deny", code: "approval.denied_earlier" },
      { verdict: "deny", code: "approval.denied_earlier" },
    ]);
  });

  it("two 3-file patches add up to the threshold: the second asks once, naming all six files", async () => {
    const app = await start();
    app.llm!.script(
      reply.toolCalls([patchCall(FILES.slice(0, 3))]),
      reply.toolCalls([patchCall(FILES.slice(3))], (body) => {
        expect(String(toolResults(body).at(-1))).toMatch(/^Patch applied to 3 files/);
      }),
      reply.text("All six are gone.", (body) => {
        const result = String(toolResults(body).at(-1));
        expect(result).toContain("file.apply_patch_delete_many: 6 files in this turn (3 in this patch)");
        expect(result).toContain("Patch applied to 3 files");
      }),
    );
    await app.channel!.receive("delete the text files, three at a time");
    const [prompt] = await waitFor(() => (prompts(app).length > 0 ? prompts(app) : undefined), "the prompt");
    // Asked only when the turn's total reached the threshold, with the whole of it in view.
    expect(present(app)).toEqual(FILES.slice(3));
    for (const file of FILES) expect(prompt!.message.text).toContain(path.join(app.config.workspace, file));
    expect(prompt!.message.text).toContain("earlier patches of this turn set out to delete");
    await app.channel!.press({ buttonId: prompt!.message.buttons![0]![0]!.id });
    await waitFor(() => app.channel!.texts().includes("All six are gone."), "the turn's end");
    app.llm!.assertDone();
    expect(prompts(app)).toHaveLength(1);
    expect(present(app)).toEqual([]);
  });

  it("a new turn starts counting from zero", async () => {
    const app = await start();
    app.llm!.script(
      reply.toolCalls([patchCall(FILES.slice(0, 3))]),
      reply.text("three gone"),
      reply.toolCalls([patchCall(FILES.slice(3))]),
      reply.text("three more gone"),
    );
    await app.channel!.receive("delete a, b and c");
    await waitFor(() => app.channel!.texts().includes("three gone"), "the first turn");
    await app.channel!.receive("now d, e and f");
    await waitFor(() => app.channel!.texts().includes("three more gone"), "the second turn");
    app.llm!.assertDone();
    expect(prompts(app)).toHaveLength(0);
    expect(present(app)).toEqual([]);
  });
});
