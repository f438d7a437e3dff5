import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { silentLogger } from "../../src/log/logger.js";
import { Redactor } from "../../src/log/redact.js";
import { Store } from "../../src/store/index.js";
import { defineTool } from "../../src/tools/define-tool.js";
import { cleanSchema, toToolParameters } from "../../src/tools/json-schema.js";
import { ToolRegistry } from "../../src/tools/registry.js";
import { SpillStore } from "../../src/tools/spill.js";
import { spillReadTool } from "../../src/tools/spill-read.js";
import { ownerCallContext } from "../helpers/call-context.js";
import { testConfig } from "../helpers/harness.js";

const secretTool = defineTool({
  name: "leaky",
  description: "Returns whatever it is given plus an environment secret.",
  inputSchema: z.object({ text: z.string() }),
  risk: "low",
  execute: ({ text }) => `${text} and the key sk-live-SECRET-123456`,
});

const bigTool = defineTool({
  name: "big",
  description: "Large output.",
  inputSchema: z.object({}),
  risk: "low",
  execute: () => Array.from({ length: 5000 }, (_, index) => `line ${index}`).join("\n"),
});

function makeRegistry(approvalsRequire: string[] = []) {
  const dir = mkdtempSync(path.join(tmpdir(), "magpie-registry-"));
  const config = testConfig({ security: { approvals: { require: approvalsRequire } } }, dir);
  const store = Store.open(":memory:");
  const redactor = new Redactor().add("sk-live-SECRET-123456", "hunter2-password");
  const spill = new SpillStore(path.join(dir, "spill"), 1_000);
  const decisions: string[] = [];
  const registry = new ToolRegistry({
    config,
    logger: silentLogger(),
    services: { store, redactor, spill },
    approvals: {
      request: async (request) => {
        decisions.push(`${request.tool}:${request.reason}`);
        return "denied";
      },
    },
    spill,
  }).register(secretTool, bigTool, spillReadTool);
  const context = ownerCallContext({ channel: "test", chatId: "c" }, { sessionKey: "s", userId: "u" });
  return { registry, store, context, decisions };
}

const call = (name: string, args: unknown) => ({
  id: "c1",
  type: "function" as const,
  function: { name, arguments: JSON.stringify(args) },
});

describe("tool registry", () => {
  it("redacts secrets from results and audited arguments", async () => {
    const { registry, store, context } = makeRegistry();
    const result = await registry.execute(
      call("leaky", { text: "password hunter2-password" }),
      ["leaky"],
      context,
    );
    expect(result).toBe("password [REDACTED] and the key [REDACTED]");
    const [entry] = store.audit.recent(1);
    expect(entry).toMatchObject({
      tool: "leaky",
      outcome: "ok",
      verdict: "allow",
      sender: "test:owner (owner)",
    });
    expect(entry!.arguments).toBe('{"text":"password [REDACTED]"}');
    expect(entry!.resultExcerpt).not.toContain("SECRET");
  });

  it("returns invalid JSON and unknown tools as errors the model can act on, and audits them", async () => {
    const { registry, store, context } = makeRegistry();
    const broken = await registry.execute(
      { id: "x", type: "function", function: { name: "leaky", arguments: "{text:" } },
      ["leaky"],
      context,
    );
    // jsonrepair completes `{text:` to `{"text": null}`, which validation then refuses.
    expect(JSON.parse(broken).error.code).toBe("tool.invalid_arguments");
    const missing = await registry.execute(call("leaky", {}), ["leaky"], context);
    expect(JSON.parse(missing).error).toMatchObject({ code: "tool.invalid_arguments" });
    expect(JSON.parse(missing).error.message).toContain("text:");
    const notGranted = await registry.execute(call("big", {}), ["leaky"], context);
    expect(JSON.parse(notGranted).error.code).toBe("tool.not_in_tool_set");
    const unknown = await registry.execute(call("nonexistent", {}), ["leaky"], context);
    expect(JSON.parse(unknown).error.code).toBe("tool.not_available");
    // A registered tool outside the turn's set is refused (verdict deny); an unknown name is an error.
    expect(store.audit.recent(10).map((entry) => `${entry.verdict}/${entry.outcome}`)).toEqual([
      "allow/error",
      "deny/denied",
      "allow/error",
      "allow/error",
    ]);
  });

  it("asks for approval when security.approvals.require names the tool, and refuses when denied", async () => {
    const { registry, store, context, decisions } = makeRegistry(["leaky"]);
    const result = await registry.execute(call("leaky", { text: "hi" }), ["leaky"], context);
    expect(JSON.parse(result).error.code).toBe("approval.denied");
    expect(decisions).toEqual(["leaky:risk:low"]);
    expect(store.audit.recent(1)[0]).toMatchObject({ verdict: "denied-by-user", outcome: "denied" });
  });

  it("spills large output to disk and lets the model read it back in slices", async () => {
    const { registry, context } = makeRegistry();
    const result = await registry.execute(call("big", {}), ["big", "spill_read"], context);
    const handle = /"(spill-[a-f0-9]{16})"/.exec(result)?.[1];
    expect(handle).toBeDefined();
    expect(result).toContain("line 0");
    expect(result).toContain("line 4999");
    expect(result.length).toBeLessThan(7_000);
    const slice = await registry.execute(
      call("spill_read", { handle, offset: 0, limit: 20 }),
      ["spill_read"],
      context,
    );
    expect(slice).toContain("line 0\nline 1");
    const traversal = await registry.execute(
      call("spill_read", { handle: "../../magpie.db" }),
      ["spill_read"],
      context,
    );
    expect(JSON.parse(traversal).error.code).toBe("spill.unknown_handle");
  });

  it("resolves tool sets: default, full, subagent never escalates", () => {
    const { registry } = makeRegistry();
    expect(registry.resolveToolSet("full").sort()).toEqual(["big", "leaky", "spill_read"]);
    expect(registry.resolveToolSet(["leaky", "nonexistent"])).toEqual(["leaky", "spill_read"]);
    expect(registry.resolveToolSet(["message", "cron_add"])).toEqual([]);
  });
});

describe("JSON Schema for the LLM", () => {
  it("converts zod input schemas and strips keywords providers reject", () => {
    const schema = z.object({
      path: z.string().describe("File path"),
      limit: z.number().int().min(1).optional().default(100),
      mode: z.literal("fast"),
      tags: z.array(z.string()).optional(),
    });
    const parameters = toToolParameters(schema);
    expect(parameters).toEqual({
      type: "object",
      properties: {
        path: { type: "string", description: "File path" },
        limit: { type: "integer", minimum: 1 },
        mode: { type: "string", enum: ["fast"] },
        tags: { type: "array", items: { type: "string" } },
      },
      required: ["path", "mode"],
    });
    expect(JSON.stringify(parameters)).not.toMatch(/\$schema|additionalProperties|default/);
  });

  it("folds oneOf into anyOf and drops unknown keywords recursively", () => {
    expect(cleanSchema({ oneOf: [{ type: "string", format: "uri" }, { const: 3 }], examples: [1] })).toEqual({
      anyOf: [{ type: "string" }, { enum: [3] }],
    });
  });
});
