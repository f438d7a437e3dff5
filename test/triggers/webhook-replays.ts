import net from "node:net";

/** One request written byte for byte (headers as given, repeated ones included); resolves with the status. */
export function rawPost(
  url: string,
  target: string,
  headers: Array<[string, string]>,
  body: string,
): Promise<number> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = net.connect(Number(port), hostname, () => {
      const lines = [
        `POST ${target} HTTP/1.1`,
        `Host: ${hostname}:${port}`,
        "Connection: close",
        "Content-Type: application/json",
        `Content-Length: ${Buffer.byteLength(body)}`,
        ...headers.map(([name, value]) => `${name}:${value}`),
      ];
      socket.end(`${lines.join("\r\n")}\r\n\r\n${body}`);
    });
    let response = "";
    socket.on("data", (chunk: Buffer) => {
      response += chunk.toString("latin1");
    });
    socket.once("error", reject);
    socket.once("close", () => resolve(Number(/^HTTP\/1\.1 (\d{3})/.exec(response)?.[1] ?? 0)));
  });
}

/**
 * Eleven re-spellings of one captured request's signature (and one of its timestamp): each would decode to the
 * same MAC somewhere, or differs only in case, spacing or repetition. `[name, value]` header lists.
 */
export function respelledHeaders(timestamp: number, signature: string): Array<Array<[string, string]>> {
  const hex = signature.slice("sha256=".length);
  const mixed = [...hex].map((digit, index) => (index % 2 ? digit.toUpperCase() : digit)).join("");
  const signed = (value: string): Array<[string, string]> => [
    ["X-Magpie-Timestamp", ` ${timestamp}`],
    ["X-Magpie-Signature", value],
  ];
  return [
    signed(` sha256=${hex.toUpperCase()}`),
    signed(` sha256=${mixed}`),
    signed(` ${signature}0`),
    signed(` ${signature}zz-tail`),
    signed(`   \t${signature}`),
    signed(` ${signature} \t `),
    [...signed(` ${signature}`), ["X-Magpie-Signature", ` ${signature}`]],
    signed(` SHA256=${hex}`),
    signed(` ${hex}`),
    signed(` sha256=${Buffer.from(hex, "hex").toString("base64")}`),
    [
      ["X-Magpie-Timestamp", ` 0${timestamp}`],
      ["X-Magpie-Signature", ` ${signature}`],
    ],
  ];
}
