import { Agent, buildConnector } from "undici";

/** An agent whose every connection goes to `address`, whatever the URL's hostname (TLS still uses the name). */
export function pinnedAgent(address: string, timeoutMs: number): Agent {
  const connector = buildConnector({ timeout: timeoutMs });
  return new Agent({
    headersTimeout: timeoutMs,
    bodyTimeout: timeoutMs,
    connect: (options, callback) => connector({ ...options, hostname: address }, callback),
  });
}
