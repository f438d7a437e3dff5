import dns from "node:dns/promises";
import type { Dispatcher } from "undici";
import { ToolError } from "../core/tool-error.js";
import { errorMessage } from "../lib/errors.js";
import { GuardRefusal } from "./guard-refusal.js";
import { readCapped } from "./read-capped.js";
import {
  addressProblem,
  HostAllowList,
  isIpLiteral,
  isLocalHostname,
  normalizeHostname,
} from "./ssrf-address.js";

/** Resolves a hostname to its addresses (a port, so tests can answer without real DNS). */
export type LookupPort = (hostname: string) => Promise<Array<{ address: string; family: number }>>;

export const systemLookup: LookupPort = (hostname) => dns.lookup(hostname, { all: true, verbatim: true });

export interface SafeHttpClientOptions {
  lookup?: LookupPort;
  /**
   * TEST ONLY — never wired from config: hostnames pinned to an address that skips the private-address check
   * (e.g. `{"public.test": "127.0.0.1"}` so a local server can play a public site). IP literals and every other
   * hostname are still judged.
   */
  testOnlyPublicHosts?: Record<string, string>;
  /** `security.ssrf.allowHosts`: private hosts or CIDRs reachable anyway (a home server on the LAN). */
  allowHosts?: readonly string[];
  /**
   * Exact origins (`scheme://host:port`) whose address is not judged: a chat platform's own configured endpoint,
   * which is 127.0.0.1 when it is a test fake or a self-hosted server. Only those origins; redirects are judged.
   */
  trustedOrigins?: readonly string[];
}

export interface SafeRequest {
  url: string;
  method?: string;
  headers?: Record<string, string>;
  body?: string;
  maxResponseBytes: number;
  timeoutMs: number;
  /** Hostnames (and their subdomains) allowed; undefined = any public host. */
  allowedDomains?: string[];
  maxRedirects?: number;
  signal?: AbortSignal;
}

export interface SafeResponse {
  status: number;
  headers: Record<string, string>;
  body: Buffer;
  truncated: boolean;
  finalUrl: string;
  redirects: string[];
}

const DEFAULT_MAX_REDIRECTS = 5;
const REDIRECT_STATUSES = new Set([301, 302, 303, 307, 308]);
/** Headers dropped when a redirect leaves the origin, as browsers do: a credential goes only where it was sent. */
const CREDENTIAL_HEADERS = new Set(["authorization", "cookie", "proxy-authorization", "x-api-key"]);
/** Headers the caller may not set: they'd let a request pretend to be for another host or smuggle a body. */
const FORBIDDEN_HEADERS = new Set([
  "host",
  "connection",
  "transfer-encoding",
  "content-length",
  "proxy-authorization",
]);

function domainAllowed(host: string, allowedDomains: string[] | undefined): boolean {
  if (!allowedDomains) return true;
  return allowedDomains.some((domain) => {
    const normalized = normalizeHostname(domain);
    return host === normalized || host.endsWith(`.${normalized}`);
  });
}

/**
 * HTTP client that cannot be pointed at the box itself or its network (SSRF): http/https only, the host is
 * resolved once, every address is judged, the connection goes to the judged address (no second DNS answer),
 * and each redirect hop is judged again.
 */
export class SafeHttpClient {
  private readonly lookup: LookupPort;
  private readonly testOnlyPublicHosts: Map<string, string>;
  private readonly allowHosts: HostAllowList;
  private readonly trustedOrigins: Set<string>;

  constructor(options: SafeHttpClientOptions = {}) {
    this.lookup = options.lookup ?? systemLookup;
    this.allowHosts = new HostAllowList(options.allowHosts);
    this.trustedOrigins = new Set((options.trustedOrigins ?? []).map((origin) => new URL(origin).origin));
    this.testOnlyPublicHosts = new Map(
      Object.entries(options.testOnlyPublicHosts ?? {}).map(([host, address]) => [
        normalizeHostname(host),
        address,
      ]),
    );
  }

  /**
   * True when the URL is refused before any DNS lookup (not a valid http(s) URL, credentials in it, a non-public IP
   * literal or a local name that allowHosts doesn't list): the rule of two leaves such a URL to this guard, so its
   * own refusal comes first (src/security/untrusted.ts). A name that needs a lookup is never refused here.
   */
  refusesWithoutLookup(rawUrl: string): boolean {
    try {
      this.judgeWithoutLookup(rawUrl);
      return false;
    } catch (error) {
      if (error instanceof GuardRefusal) return true;
      throw error;
    }
  }

  /** Parses and judges a URL; returns the address to connect to. Throws ToolError `ssrf.*` on refusal. */
  async resolveTarget(rawUrl: string, allowedDomains?: string[]): Promise<{ url: URL; address: string }> {
    const { url, host, trusted, address } = this.judgeWithoutLookup(rawUrl, allowedDomains);
    if (address) return { url, address };
    let addresses: Array<{ address: string; family: number }>;
    try {
      addresses = await this.lookup(host);
    } catch (error) {
      throw new ToolError(
        "ssrf.dns_failed",
        `Could not resolve ${host}: ${errorMessage(error)}. Check the hostname.`,
      );
    }
    if (addresses.length === 0) throw new ToolError("ssrf.dns_failed", `${host} has no addresses.`);
    // Every answer must be public: otherwise a mixed answer would let a later connection land on a private one.
    if (!trusted) for (const { address } of addresses) this.judge(host, address);
    return { url, address: addresses[0]!.address };
  }

  /** What `resolveTarget` decides without DNS: the refusals, or the address of an IP literal / pinned host. */
  private judgeWithoutLookup(
    rawUrl: string,
    allowedDomains?: string[],
  ): { url: URL; host: string; trusted: boolean; address?: string } {
    let url: URL;
    try {
      url = new URL(rawUrl);
    } catch {
      throw new GuardRefusal(
        "ssrf.invalid_url",
        `'${rawUrl}' is not a valid absolute URL. Use http://… or https://….`,
      );
    }
    if (url.protocol !== "http:" && url.protocol !== "https:") {
      throw new GuardRefusal(
        "ssrf.scheme_not_allowed",
        `Only http and https URLs are allowed, not ${url.protocol}. Use an http(s) URL.`,
      );
    }
    if (url.username || url.password) {
      throw new GuardRefusal(
        "ssrf.credentials_in_url",
        "URLs with user:password@ are refused. Send credentials in a header instead.",
      );
    }
    const host = normalizeHostname(url.hostname);
    if (!domainAllowed(host, allowedDomains)) {
      throw new GuardRefusal(
        "ssrf.domain_not_allowed",
        `${host} is not in the allowed domains (${allowedDomains?.join(", ")}). Use one of those or ask the owner to extend allowedDomains.`,
      );
    }
    const pinned = this.testOnlyPublicHosts.get(host);
    const trusted = this.trustedOrigins.has(url.origin);
    if (pinned) return { url, host, trusted, address: pinned };
    if (isIpLiteral(host)) {
      if (!trusted) this.judge(host, host);
      return { url, host, trusted, address: host };
    }
    if (isLocalHostname(host) && !trusted && !this.allowHosts.allowsName(host)) {
      throw new GuardRefusal(
        "ssrf.private_address",
        `${host} names this machine or its local network. Only public addresses may be fetched.`,
      );
    }
    return { url, host, trusted };
  }

  private judge(host: string, address: string): void {
    if (this.allowHosts.allowsAddress(host, address)) return;
    const problem = addressProblem(address);
    if (problem) {
      throw new GuardRefusal(
        "ssrf.private_address",
        `${host} resolves to ${address} (${problem}); loopback, private, link-local, CGNAT, multicast, metadata and other non-public addresses are refused. Only public addresses may be fetched${this.allowHosts.isEmpty ? "; the owner can list a private host in security.ssrf.allowHosts" : ""}.`,
      );
    }
  }

  /** Sends a request, following up to 5 redirects, each re-judged; the body is cut at maxResponseBytes. */
  async request(input: SafeRequest): Promise<SafeResponse> {
    const maxRedirects = input.maxRedirects ?? DEFAULT_MAX_REDIRECTS;
    const redirects: string[] = [];
    let currentUrl = input.url;
    let method = (input.method ?? "GET").toUpperCase();
    let body = input.body;
    let headers = Object.fromEntries(
      Object.entries(input.headers ?? {}).filter(([name]) => !FORBIDDEN_HEADERS.has(name.toLowerCase())),
    );
    const signal = input.signal
      ? AbortSignal.any([input.signal, AbortSignal.timeout(input.timeoutMs)])
      : AbortSignal.timeout(input.timeoutMs);
    // undici and the pinned agent load on the first request, not at start-up. `request` comes through our own
    // module: a dynamic import() of undici (CommonJS) yields only `default` in the split bundle.
    const { request, pinnedAgent } = await import("./pinned-agent.js");
    for (;;) {
      const { url, address } = await this.resolveTarget(currentUrl, input.allowedDomains);
      const dispatcher = pinnedAgent(address, input.timeoutMs);
      try {
        let response: Dispatcher.ResponseData;
        try {
          response = await request(url, {
            dispatcher,
            method: method as Dispatcher.HttpMethod,
            headers,
            body,
            signal,
          });
        } catch (error) {
          if (signal.aborted)
            throw new ToolError(
              "http.timeout",
              `The request to ${url.host} timed out after ${input.timeoutMs} ms.`,
            );
          throw new ToolError(
            "http.request_failed",
            `The request to ${url.host} failed: ${errorMessage(error)}.`,
          );
        }
        const location = headerValue(response.headers.location);
        if (REDIRECT_STATUSES.has(response.statusCode) && location) {
          await response.body.dump().catch(() => undefined);
          if (redirects.length >= maxRedirects) {
            throw new ToolError(
              "ssrf.too_many_redirects",
              `More than ${maxRedirects} redirects starting at ${input.url}; stopped at ${currentUrl}.`,
            );
          }
          const next = new URL(location, url);
          if (next.origin !== url.origin) {
            headers = Object.fromEntries(
              Object.entries(headers).filter(([name]) => !CREDENTIAL_HEADERS.has(name.toLowerCase())),
            );
          }
          currentUrl = next.toString();
          redirects.push(currentUrl);
          if (
            response.statusCode === 303 ||
            ((response.statusCode === 301 || response.statusCode === 302) && method === "POST")
          ) {
            method = "GET";
            body = undefined;
          }
          continue;
        }
        const { buffer, truncated } = await readCapped(response.body, input.maxResponseBytes);
        return {
          status: response.statusCode,
          headers: Object.fromEntries(
            Object.entries(response.headers).map(([name, value]) => [name, headerValue(value) ?? ""]),
          ),
          body: buffer,
          truncated,
          finalUrl: url.toString(),
          redirects,
        };
      } finally {
        await dispatcher.close().catch(() => undefined);
      }
    }
  }
}

function headerValue(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value.join(", ") : value;
}
