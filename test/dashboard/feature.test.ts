import { Writable } from "node:stream";
import pino from "pino";
import { describe, expect, it } from "vitest";
import { dashboardFeature } from "../../src/app/dashboard-feature.js";
import { startTestApp } from "../helpers/harness.js";

const TOKEN = "feature-test-token-0123456789";

function capturingLogger(): { logger: pino.Logger; lines: () => string } {
  let text = "";
  const stream = new Writable({
    write(chunk, _encoding, done) {
      text += chunk;
      done();
    },
  });
  return { logger: pino({ level: "info" }, stream), lines: () => text };
}

describe("dashboard feature", () => {
  it("disabled: GET / is not served and nothing is logged about it", async () => {
    const { logger, lines } = capturingLogger();
    const magpie = await startTestApp({ llm: false, logger, features: [dashboardFeature] });
    try {
      expect((await fetch(`${magpie.url}/`)).status).toBe(404);
      expect(lines()).not.toContain("dashboard");
    } finally {
      await magpie.stop();
    }
  });

  it("enabled on a non-loopback address: warns about TLS", async () => {
    const { logger, lines } = capturingLogger();
    const magpie = await startTestApp({
      llm: false,
      logger,
      features: [dashboardFeature],
      config: { http: { host: "0.0.0.0", dashboard: { enabled: true, token: TOKEN } } },
    });
    try {
      expect((await fetch(`${magpie.url}/`)).status).toBe(401);
      expect(lines()).toMatch(/"level":40.*non-loopback address/);
      expect(lines()).not.toContain(TOKEN);
    } finally {
      await magpie.stop();
    }
  });
});
