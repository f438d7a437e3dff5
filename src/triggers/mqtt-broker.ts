/** Which broker a URL names, compared the way a connection would reach it (credentials never part of it). */

const DEFAULT_PORTS: Record<string, string> = {
  "mqtt:": "1883",
  "tcp:": "1883",
  "mqtts:": "8883",
  "ssl:": "8883",
  "tls:": "8883",
  "ws:": "80",
  "wss:": "443",
};

/** `protocol//host:port/path` of a broker URL (lower-case host, default port filled in), or null when invalid. */
export function brokerKey(url: string): string | null {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return null;
  }
  const protocol = parsed.protocol.toLowerCase();
  const port = parsed.port || DEFAULT_PORTS[protocol] || "";
  const websocket = protocol === "ws:" || protocol === "wss:";
  // Only a WebSocket URL's path reaches the broker; mqtt:// ignores it.
  const route = websocket ? parsed.pathname.replace(/\/$/, "") : "";
  return `${protocol}//${parsed.hostname.toLowerCase()}:${port}${route}`;
}

/** True when both URLs reach the same broker (scheme, host, port; the path for WebSockets). */
export function sameBroker(a: string, b: string): boolean {
  const key = brokerKey(a);
  return key !== null && key === brokerKey(b);
}

/** The broker URL without its password, for logs and messages. */
export function redactUrl(url: string): string {
  try {
    const parsed = new URL(url);
    if (parsed.password) parsed.password = "***";
    return parsed.toString();
  } catch {
    return "(invalid url)";
  }
}
