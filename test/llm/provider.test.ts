import { describe, expect, it } from "vitest";
import type { MagpieConfig } from "../../src/config/schema.js";
import { clientConstructions, primaryEndpoint } from "../../src/llm/provider.js";

describe("one LLM provider per endpoint", () => {
  it("transcription and speech of one config share one lazily built openai client", async () => {
    const config = {
      llm: { baseUrl: "http://127.0.0.1:9/v1", apiKey: "k", timeoutMs: 1000, maxRetries: 0 },
    } as unknown as MagpieConfig;
    const before = clientConstructions.count;
    const endpoint = primaryEndpoint(config);
    expect(primaryEndpoint(config)).toBe(endpoint);
    expect(clientConstructions.count).toBe(before); // nothing built until a request
    const [a, b] = await Promise.all([endpoint.client(), primaryEndpoint(config).client()]);
    expect(a).toBe(b);
    expect(clientConstructions.count).toBe(before + 1);
    expect(a.baseURL).toBe("http://127.0.0.1:9/v1");
  });
});
