import { describe, expect, it } from "vitest";
import { parseAuthResults, verifySender } from "../../channels/email-auth.js";

const ID = "mx.example.org";

describe("Authentication-Results", () => {
  it("parses methods, results and properties, skipping comments and quotes", () => {
    expect(
      parseAuthResults(
        'MX.Example.org 1; spf=pass (sender IP is 192.0.2.1) smtp.mailfrom="alice@example.com"; dkim=pass (good (nested) sig) header.d=example.com',
      ),
    ).toEqual({
      authservId: "mx.example.org",
      results: [
        { method: "spf", result: "pass", properties: { "smtp.mailfrom": "alice@example.com" } },
        { method: "dkim", result: "pass", properties: { "header.d": "example.com" } },
      ],
    });
    expect(parseAuthResults("   ")).toBeNull();
  });

  it("believes dmarc=pass for the From domain, or spf and dkim aligned (a subdomain aligns)", () => {
    expect(
      verifySender("alice@example.com", [`${ID}; dmarc=pass header.from=example.com`], ID).verified,
    ).toBe(true);
    expect(
      verifySender(
        "alice@example.com",
        [`${ID}; spf=pass smtp.mailfrom=mail.example.com; dkim=pass header.d=example.com`],
        ID,
      ).verified,
    ).toBe(true);
  });

  it("refuses everything else", () => {
    const cases: Array<[string[], string | undefined]> = [
      [[`${ID}; dmarc=pass header.from=example.com`], undefined],
      [[`${ID}; dmarc=pass header.from=evil.test`], ID],
      [[`${ID}; dmarc=fail header.from=example.com`], ID],
      [[`${ID}; spf=pass smtp.mailfrom=example.com`], ID],
      [[`${ID}; dkim=pass header.d=example.com`], ID],
      [[`${ID}; spf=pass smtp.mailfrom=notexample.com; dkim=pass header.d=example.com`], ID],
      [[`${ID}; spf=pass smtp.mailfrom=example.com; dkim=pass header.d=example.com.evil.test`], ID],
      [[`mx.example.org.evil.test; dmarc=pass header.from=example.com`], ID],
      [[`${ID}; dmarc=pass (header.from=example.com) header.from=evil.test`], ID],
    ];
    for (const [headers, authservId] of cases) {
      expect(verifySender("alice@example.com", headers, authservId), headers.join(" | ")).toMatchObject({
        verified: false,
      });
    }
  });

  it("stays linear on a 1 MB hostile header", () => {
    const hostile = `${ID}; ${"(".repeat(500_000)}${" spf=pass".repeat(50_000)}`;
    const started = Date.now();
    verifySender("alice@example.com", [hostile, `${ID};${";".repeat(1_000_000)}`], ID);
    expect(Date.now() - started).toBeLessThan(5000);
  });
});
