import http from "node:http";
import type { AddressInfo } from "node:net";
import { Readable } from "node:stream";
import { gzipSync } from "node:zlib";
import OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { leanFetch } from "../../src/lib/lean-fetch.js";

/**
 * `leanFetch` (src/lib/lean-fetch.ts) stands in for global `fetch` under the openai SDK and grammY: each case is
 * what those SDKs rely on, checked against a real HTTP server on 127.0.0.1 — and where it matters, against what
 * global `fetch` does with the same request.
 */
let server: http.Server;
let base: string;
const seen: Array<{ method: string; url: string; headers: http.IncomingHttpHeaders; body: string }> = [];
let releaseStream: (() => void) | undefined;

beforeAll(async () => {
  server = http.createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on("data", (chunk: Buffer) => chunks.push(chunk));
    request.on("end", () => {
      const body = Buffer.concat(chunks).toString();
      seen.push({ method: request.method!, url: request.url!, headers: request.headers, body });
      const url = request.url!;
      if (url === "/json") {
        response.writeHead(200, { "content-type": "application/json", "x-request-id": "req-1" });
        response.end(JSON.stringify({ echo: body, method: request.method }));
      } else if (url === "/see-other") {
        response.writeHead(303, { location: "/json" });
        response.end();
      } else if (url === "/temporary") {
        response.writeHead(307, { location: "/json" });
        response.end();
      } else if (url === "/gzip") {
        response.writeHead(200, { "content-type": "application/json", "content-encoding": "gzip" });
        response.end(gzipSync(JSON.stringify({ zipped: true })));
      } else if (url === "/empty") {
        response.writeHead(204, { "x-note": "none" });
        response.end();
      } else if (url === "/twice") {
        response.setHeader("set-cookie", ["a=1", "b=2"]);
        response.writeHead(200, { "content-type": "text/plain" });
        response.end("ok");
      } else if (url === "/bom") {
        response.writeHead(200, { "content-type": "application/json; charset=utf-8" });
        // A BOM, then text with a character of four bytes and one bad byte.
        response.end(
          Buffer.concat([
            Buffer.from([0xef, 0xbb, 0xbf]),
            Buffer.from('{"t":"🐦 é'),
            Buffer.from([0xff]),
            Buffer.from('"}'),
          ]),
        );
      } else if (url === "/slow") {
        setTimeout(() => {
          if (!response.destroyed) response.end("late");
        }, 5_000);
      } else if (url === "/events") {
        response.writeHead(200, { "content-type": "text/event-stream" });
        response.write('data: {"n":1}\n\n');
        releaseStream = () => response.end('data: {"n":2}\n\ndata: [DONE]\n\n');
      } else if (url === "/v1/chat/completions") {
        response.writeHead(200, { "content-type": "application/json" });
        response.end(
          JSON.stringify({
            id: "c1",
            object: "chat.completion",
            created: 1,
            model: "m",
            choices: [{ index: 0, message: { role: "assistant", content: "hi" }, finish_reason: "stop" }],
          }),
        );
      } else {
        response.writeHead(404);
        response.end();
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

const lean = leanFetch();

describe("leanFetch", () => {
  it("POSTs bytes and text with the caller's headers; the answer reads like fetch's (status, headers, json)", async () => {
    for (const body of [Buffer.from('{"a":1}'), '{"a":1}']) {
      const answer = await lean(`${base}/json`, {
        method: "post",
        headers: { "Content-Type": "application/json", "X-Test": "yes" },
        body,
      });
      expect(answer.status).toBe(200);
      expect(answer.ok).toBe(true);
      expect(answer.headers.get("x-request-id")).toBe("req-1");
      expect(await answer.json()).toEqual({ echo: '{"a":1}', method: "POST" });
      expect(seen.at(-1)!.headers["x-test"]).toBe("yes");
    }
    const viaFetch = await fetch(`${base}/json`, { method: "POST", body: '{"a":1}' });
    expect(await viaFetch.json()).toEqual({ echo: '{"a":1}', method: "POST" });
  });

  it("reads a body as fetch does (a BOM dropped, a bad byte replaced), once, by json, text or arrayBuffer", async () => {
    for (const read of ["json", "text", "arrayBuffer"] as const) {
      const mine = await lean(`${base}/bom`);
      const theirs = await fetch(`${base}/bom`);
      const [got, want] = [await mine[read](), await theirs[read]()];
      if (read === "arrayBuffer")
        expect(Buffer.from(got as ArrayBuffer)).toEqual(Buffer.from(want as ArrayBuffer));
      else expect(got).toEqual(want);
      // A body can be read once, as fetch's: a second read of any kind is refused the same way.
      for (const again of ["json", "text", "arrayBuffer"] as const) {
        await expect(mine[again]()).rejects.toThrow(TypeError);
        await expect(theirs[again]()).rejects.toThrow(TypeError);
      }
    }
    // Not JSON: the same SyntaxError fetch's json() gives.
    const text = await lean(`${base}/twice`);
    await expect(text.json()).rejects.toThrow(SyntaxError);
    expect(await (await lean(`${base}/twice`)).blob().then((blob) => blob.text())).toBe("ok");
  });

  it("follows redirects as fetch does: a 303 becomes a GET, a 307 repeats the POST with its body", async () => {
    const other = await lean(`${base}/see-other`, { method: "POST", body: "x=1" });
    expect(await other.json()).toEqual({ echo: "", method: "GET" });
    const temporary = await lean(`${base}/temporary`, { method: "POST", body: "x=1" });
    expect(await temporary.json()).toEqual({ echo: "x=1", method: "POST" });
  });

  it("asks for no compression, decodes one sent anyway, and gives a 204 no body", async () => {
    const zipped = await lean(`${base}/gzip`, { headers: { "accept-encoding": "gzip, br" } });
    expect(seen.at(-1)!.headers["accept-encoding"]).toBeUndefined();
    expect(zipped.headers.get("content-encoding")).toBeNull();
    expect(await zipped.json()).toEqual({ zipped: true });
    const empty = await lean(`${base}/empty`, { method: "POST", body: "{}" });
    expect(empty.status).toBe(204);
    expect(empty.body).toBeNull();
    expect(empty.headers.get("x-note")).toBe("none");
  });

  it("keeps repeated response headers and takes headers as a Headers object or pairs", async () => {
    const answer = await lean(`${base}/twice`, { headers: new Headers([["x-one", "1"]]) });
    expect(answer.headers.getSetCookie()).toEqual(["a=1", "b=2"]);
    expect(await answer.text()).toBe("ok");
    await lean(`${base}/twice`, {
      headers: [
        ["x-pair", "a"],
        ["X-Pair", "b"],
      ],
    });
    expect(seen.at(-1)!.headers["x-pair"]).toBe("a, b");
  });

  it("an abort rejects with an AbortError, as fetch's does", async () => {
    const controller = new AbortController();
    const pending = lean(`${base}/slow`, { signal: controller.signal });
    setTimeout(() => controller.abort(), 50);
    await expect(pending).rejects.toMatchObject({ name: "AbortError" });
    const viaFetch = fetch(`${base}/slow`, { signal: AbortSignal.timeout(50) });
    await expect(viaFetch).rejects.toMatchObject({ name: "TimeoutError" });
    await expect(lean(`${base}/slow`, { signal: AbortSignal.timeout(50) })).rejects.toMatchObject({
      name: "TimeoutError",
    });
  });

  it("a refused connection rejects as fetch's does: TypeError 'fetch failed' with the cause", async () => {
    const closed = http.createServer();
    await new Promise<void>((resolve) => closed.listen(0, "127.0.0.1", resolve));
    const port = (closed.address() as AddressInfo).port;
    await new Promise((resolve) => closed.close(resolve));
    const error = await lean(`http://127.0.0.1:${port}/json`, { method: "POST", body: "{}" }).catch(
      (caught: unknown) => caught,
    );
    const viaFetch = await fetch(`http://127.0.0.1:${port}/json`).catch((caught: unknown) => caught);
    for (const each of [error, viaFetch]) {
      expect(each).toBeInstanceOf(TypeError);
      expect((each as Error).message).toBe("fetch failed");
      expect(String((each as Error).cause)).toMatch(/ECONNREFUSED/);
    }
  });

  it("hands over a server-sent event stream as it arrives, not when it ends", async () => {
    const answer = await lean(`${base}/events`, { method: "POST", body: "{}" });
    const reader = answer.body!.getReader();
    const first = await reader.read();
    expect(Buffer.from(first.value!).toString()).toContain('{"n":1}');
    releaseStream!();
    let rest = "";
    for (let chunk = await reader.read(); !chunk.done; chunk = await reader.read())
      rest += Buffer.from(chunk.value).toString();
    expect(rest).toContain("[DONE]");
  });

  it("sends a Node stream body (grammY's multipart upload) and leaves FormData to global fetch", async () => {
    await lean(`${base}/json`, { method: "POST", body: Readable.from(["part one, ", "part two"]) as never });
    expect(seen.at(-1)!.body).toBe("part one, part two");
    const form = new FormData();
    form.set("field", "value");
    const answer = await lean(`${base}/json`, { method: "POST", body: form });
    expect(((await answer.json()) as { echo: string }).echo).toContain('name="field"');
    expect(seen.at(-1)!.headers["content-type"]).toMatch(/^multipart\/form-data; boundary=/);
  });

  it("under the openai SDK: a completion, and a refused connection as APIConnectionError", async () => {
    const client = new OpenAI({ apiKey: "k", baseURL: `${base}/v1`, fetch: lean, maxRetries: 0 });
    const completion = await client.chat.completions.create({
      model: "m",
      messages: [{ role: "user", content: "x" }],
    });
    expect(completion.choices[0]!.message.content).toBe("hi");
    const closed = new OpenAI({ apiKey: "k", baseURL: "http://127.0.0.1:9/v1", fetch: lean, maxRetries: 0 });
    await expect(
      closed.chat.completions.create({ model: "m", messages: [{ role: "user", content: "x" }] }),
    ).rejects.toBeInstanceOf(OpenAI.APIConnectionError);
  });
});
