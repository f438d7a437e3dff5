import { describe, expect, it } from "vitest";
import { modulesLoadedAtStart } from "../helpers/loaded-modules.js";

/** The dashboard's and the webchat's modules (and htmx, markdown-it) among those a start loads. */
async function startAndStop(yaml: string): Promise<{ modules: string[]; stdout: string }> {
  const { urls, stdout } = await modulesLoadedAtStart(yaml);
  return {
    stdout,
    modules: urls.filter((url) =>
      /\/(src\/dashboard|channels\/web\.js|node_modules\/(htmx\.org|markdown-it))/.test(url),
    ),
  };
}

describe("the dashboard costs nothing while disabled", () => {
  it("loads no dashboard or webchat module unless http.dashboard.enabled", async () => {
    const off = await startAndStop("http:\n  port: 0\n");
    expect(off.modules).toEqual([]);
    const on = await startAndStop(
      "http:\n  port: 0\n  dashboard:\n    enabled: true\n    token: lean-test-token-0123456789\n",
    );
    // The hook sees them when they load: the check above is not vacuous.
    expect(on.modules.some((url) => url.includes("/src/dashboard/"))).toBe(true);
    expect(on.modules.some((url) => url.includes("channels/web.js"))).toBe(true);
    expect(on.modules.some((url) => url.includes("node_modules/markdown-it/"))).toBe(true);
    expect(on.stdout).toContain('"web"');
  }, 40_000);
});
