import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type OpenAiFake, startOpenAiFake } from "../fakes/openai.js";
import { runShippedCli } from "./shipped-bot.js";

/**
 * Issue 34 → One LLM provider, through the shipped build: `magpie memory` (no running bot) takes its embeddings
 * from `llm`'s provider too, so what it sends to `/embeddings` is redacted like a chat request.
 */

/** A secret-named variable's value: the redactor knows it. */
const SECRET = "tok-51a2b3c4d5e6f7a8";

describe("shipped build: embeddings from the LLM provider", () => {
  let llm: OpenAiFake;
  let dir: string;
  let configFile: string;
  const env = () => ({ PATH: process.env.PATH, HOME: dir, HOUSE_API_TOKEN: SECRET });

  beforeAll(async () => {
    llm = await startOpenAiFake();
    dir = mkdtempSync(path.join(tmpdir(), "magpie-shipped-provider-"));
    configFile = path.join(dir, "magpie.yaml");
    writeFileSync(
      configFile,
      JSON.stringify({
        dataDir: path.join(dir, "data"),
        workspace: path.join(dir, "workspace"),
        llm: { baseUrl: llm.url, apiKey: "sk-test", model: "test-model", embeddingModel: "embed-model" },
      }),
    );
  });

  afterAll(async () => {
    await llm?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it("magpie memory add and search: the secret never reaches /embeddings", async () => {
    const cli = (args: string[]) =>
      runShippedCli([...args, "--config", configFile], { cwd: dir, env: env() });
    const added = await cli(["memory", "add", "door", `The door code is ${SECRET}`]);
    expect(added.code).toBe(0);
    const search = await cli(["memory", "search", "door", "code", SECRET]);
    expect(search.code).toBe(0);
    // The memory itself is kept as written (it is the owner's own database).
    expect(search.stdout).toContain(`The door code is ${SECRET}`);

    const sent = llm.embeddingRequests.flatMap((request) => request.input);
    expect(sent).toContain("The door code is [REDACTED]");
    expect(sent).toContain("door code [REDACTED]");
    expect(JSON.stringify(llm.embeddingRequests)).not.toContain(SECRET);
    expect(llm.requests).toHaveLength(0);
  });
});
