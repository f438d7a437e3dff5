import { Readable, type Transform } from "node:stream";
import zlib from "node:zlib";
import { Agent, type Dispatcher, interceptors, request } from "undici";

/**
 * A `fetch` for the SDKs that call one JSON API over and over — the `openai` client (every LLM request of a turn)
 * and grammY (each long poll and `sendMessage`) — on undici's `request()`, the same library global `fetch` is made
 * of, without the WHATWG fetch machinery around it (the request's body turned into a web stream and written as an
 * iterable, the response's headers and body through web streams). Measured on this box, a POST of 20 KB of JSON to
 * a server on 127.0.0.1 and its answer read with `.json()`: 0.55 → 0.23 ms per round trip (docs/performance.md).
 *
 * What it keeps of `fetch`: redirects are followed as fetch follows them (undici's redirect interceptor: 303, and
 * 301/302 after a POST, become a GET), a compressed answer is decompressed (none is asked for: no `accept-encoding`
 * is sent; undici's decompress interceptor is still experimental and warns), an abort rejects with the signal's
 * reason (an `AbortError`), and a connection failure rejects as fetch does (`TypeError: fetch failed`, the cause
 * attached), so the SDKs classify and retry exactly as before. The answer's body is read whole before the `Response`
 * is handed back, as both SDKs do next anyway (`.json()`, `.arrayBuffer()`); a server-sent event stream (a streamed
 * completion) is handed over as it arrives. A `Request` object as input, and a body undici can't send as it is (a
 * web `ReadableStream`, an async iterable, `FormData`, `Blob`, `URLSearchParams`), go through global `fetch`.
 */
export function leanFetch(dispatcher: Dispatcher = defaultDispatcher()): typeof fetch {
  const lean: typeof fetch = async (input, init = {}) => {
    const body = init.body ?? null;
    if (input instanceof Request || !sendable(body)) return fetch(input, init);
    const method = (init.method ?? "GET").toUpperCase();
    let answer: Dispatcher.ResponseData;
    try {
      answer = await request(input instanceof URL ? input : String(input), {
        dispatcher,
        method: method as Dispatcher.HttpMethod,
        headers: headerRecord(init.headers),
        body,
        signal: init.signal ?? undefined,
      });
    } catch (error) {
      if (error instanceof Error && error.name === "AbortError") throw error;
      if (init.signal?.aborted) throw init.signal.reason;
      throw new TypeError("fetch failed", { cause: error });
    }
    const headers = responseHeaders(answer.headers);
    const status = answer.statusCode;
    if (NULL_BODY.has(status) || method === "HEAD") {
      answer.body.resume();
      return new Response(null, { status, headers });
    }
    const decoder = decoderFor(headers.get("content-encoding"));
    if (decoder) {
      headers.delete("content-encoding");
      headers.delete("content-length");
    }
    if (headers.get("content-type")?.includes("text/event-stream")) {
      const events = decoder ? answer.body.pipe(decoder.stream()) : answer.body;
      return new Response(Readable.toWeb(events) as ReadableStream<Uint8Array>, { status, headers });
    }
    let bytes: ArrayBuffer | Buffer;
    try {
      bytes = await answer.body.arrayBuffer();
      if (decoder) bytes = decoder.whole(Buffer.from(bytes));
    } catch (error) {
      if (error instanceof Error && error.name === "AbortError") throw error;
      throw new TypeError("fetch failed", { cause: error });
    }
    return wholeResponse(bytes, { status, headers });
  };
  return lean;
}

const UTF8 = new TextDecoder();

/**
 * The answer as a `Response` whose body is already read whole: `json()`, `text()` and `arrayBuffer()` take the bytes
 * as they are instead of reading them back through the body's web stream — 19–31 µs per answer that way against
 * about 4 µs (a 400-byte completion, measured on this box), once per LLM answer, long poll and `sendMessage` (issue
 * 35, hot path). Decoded as fetch decodes (UTF-8, a leading BOM dropped, bad bytes replaced); each can be read once,
 * as fetch allows; `body`, `blob()`, `formData()` and `clone()` are fetch's own.
 */
function wholeResponse(bytes: ArrayBuffer | Buffer, init: ResponseInit): Response {
  const response = new Response(bytes, init);
  const view = bytes instanceof Buffer ? bytes : Buffer.from(new Uint8Array(bytes));
  let read = false;
  const take = (): Buffer => {
    if (read || response.bodyUsed) throw new TypeError("Body is unusable: Body has already been read");
    read = true;
    return view;
  };
  Object.defineProperties(response, {
    text: { value: async () => UTF8.decode(take()) },
    json: { value: async () => JSON.parse(UTF8.decode(take())) as unknown },
    arrayBuffer: {
      value: async () => {
        const whole = take();
        return whole.buffer.slice(whole.byteOffset, whole.byteOffset + whole.byteLength);
      },
    },
  });
  return response;
}

/** How a `content-encoding` fetch decodes is undone, whole or as a stream (none for identity or an unknown one). */
function decoderFor(
  encoding: string | null,
): { whole: (bytes: Buffer) => Buffer; stream: () => Transform } | undefined {
  switch (encoding?.trim().toLowerCase()) {
    case "gzip":
    case "x-gzip":
      return { whole: (bytes) => zlib.gunzipSync(bytes), stream: () => zlib.createGunzip() };
    case "deflate":
      return { whole: (bytes) => zlib.inflateSync(bytes), stream: () => zlib.createInflate() };
    case "br":
      return {
        whole: (bytes) => zlib.brotliDecompressSync(bytes),
        stream: () => zlib.createBrotliDecompress(),
      };
    default:
      return undefined;
  }
}

/** Statuses whose response has no body (the `Response` constructor refuses one). */
const NULL_BODY = new Set([101, 103, 204, 205, 304]);

let shared: Dispatcher | undefined;
/** One keep-alive pool for every lean fetch of the process, following redirects like fetch. */
function defaultDispatcher(): Dispatcher {
  shared ??= new Agent().compose(interceptors.redirect({ maxRedirections: 20 }));
  return shared;
}

/** A body undici's `request()` sends as it is: text, bytes or a Node stream (grammY's multipart upload). */
function sendable(body: unknown): body is string | Uint8Array | Readable | null {
  return body === null || typeof body === "string" || body instanceof Uint8Array || body instanceof Readable;
}

/** Headers in any of fetch's forms, as undici's `request()` takes them (repeated names joined as fetch joins them). */
function headerRecord(headers: RequestInit["headers"]): Record<string, string> | undefined {
  if (headers === undefined) return undefined;
  const record: Record<string, string> = {};
  const add = (name: string, value: string) => {
    const key = name.toLowerCase();
    // Identity answers only: what a caller's `accept-encoding` would bring is decoded above only as a fallback.
    if (key === "accept-encoding") return;
    record[key] = key in record ? `${record[key]}, ${value}` : value;
  };
  if (headers instanceof Headers) for (const [name, value] of headers) add(name, value);
  else if (Array.isArray(headers)) for (const [name, value] of headers) add(name!, value!);
  else for (const [name, value] of Object.entries(headers)) if (value !== undefined) add(name, String(value));
  return record;
}

function responseHeaders(raw: Record<string, string | string[] | undefined>): Headers {
  const headers = new Headers();
  for (const [name, value] of Object.entries(raw)) {
    if (value === undefined) continue;
    if (Array.isArray(value)) for (const each of value) headers.append(name, each);
    else headers.append(name, value);
  }
  return headers;
}
