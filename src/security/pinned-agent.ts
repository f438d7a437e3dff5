import { Agent, buildConnector } from "undici";

/** undici's `request`, re-exported so lazy callers reach it through a static import (see safe-http.ts). */
export { request } from "undici";

/** An agent whose every connection goes to `address`, whatever the URL's hostname (TLS still uses the name). */
export function pinnedAgent(address: string, timeoutMs: number): Agent {
  const connector = buildConnector({ timeout: timeoutMs });
  return new Agent({
    headersTimeout: timeoutMs,
    bodyTimeout: timeoutMs,
    connect: (options, callback) => connector({ ...options, hostname: address }, callback),
  });
}
