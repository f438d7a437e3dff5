import { afterEach, describe, expect, it } from "vitest";
import { eventPublisher } from "../../src/core/events.js";
import { ModelChainWatch } from "../../src/dashboard/pages/home-model.js";
import { Store } from "../../src/store/index.js";

const chain = { primary: "big-model", fallbacks: ["small-model"] };
const call = {
  origin: "user",
  kind: "chat" as const,
  promptTokens: 1,
  completionTokens: 1,
  estimated: false,
  latencyMs: 5,
};
let store: Store;
let watch: ModelChainWatch | undefined;
afterEach(() => {
  watch?.stop();
  store?.close();
});

describe("the home page's model chain state", () => {
  it("follows this app's chat calls: primary, fallback, every model failed; stops listening when stopped", () => {
    store = Store.open(":memory:");
    const events = eventPublisher("app-1");
    const other = eventPublisher("app-2");
    watch = new ModelChainWatch(() => chain, store.db, "app-1");
    expect(watch.state()).toEqual({ chain, last: null });

    events.llmCall({ ...call, model: "big-model", result: "ok", at: 1_000 });
    expect(watch.state().last).toEqual({ result: "primary", model: "big-model", at: 1_000 });
    events.llmCall({ ...call, model: "small-model", result: "ok", fallback: true, at: 2_000 });
    expect(watch.state().last).toMatchObject({ result: "fallback", model: "small-model" });
    // An embedding says nothing about the chat chain; another app's calls are not ours.
    events.llmCall({ ...call, kind: "embedding", model: "embedder", result: "ok", at: 2_500 });
    other.llmCall({ ...call, model: "big-model", result: "ok", at: 2_600 });
    expect(watch.state().last).toMatchObject({ result: "fallback", at: 2_000 });
    events.llmCall({ ...call, model: "big-model", result: "error", errorCode: "llm.all_failed", at: 3_000 });
    expect(watch.state().last).toEqual({
      result: "failed",
      model: "big-model",
      at: 3_000,
      errorCode: "llm.all_failed",
    });

    watch.stop();
    events.llmCall({ ...call, model: "big-model", result: "ok", at: 4_000 });
    expect(watch.state().last).toMatchObject({ result: "failed", at: 3_000 });
  });

  it("before the first call since start, the ledger's last chat call says which model answered", () => {
    store = Store.open(":memory:");
    store.db
      .prepare(
        `INSERT INTO llm_usage (at, origin, session_key, history_key, kind, model, prompt_tokens, completion_tokens, estimated)
         VALUES (?, 'user', 's', 's', ?, ?, 1, 1, 0)`,
      )
      .run(5_000, "chat", "small-model");
    store.db
      .prepare(
        `INSERT INTO llm_usage (at, origin, session_key, history_key, kind, model, prompt_tokens, completion_tokens, estimated)
         VALUES (?, 'memory', 'memory', 'memory', ?, ?, 1, 0, 0)`,
      )
      .run(6_000, "embedding", "embedder");
    watch = new ModelChainWatch(() => chain, store.db, "app-3");
    expect(watch.state().last).toEqual({ result: "fallback", model: "small-model", at: 5_000 });
    const none = new ModelChainWatch(() => null, store.db, "app-4");
    expect(none.state()).toMatchObject({ chain: null });
    none.stop();
  });
});
