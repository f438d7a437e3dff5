import type { Browser, BrowserContext, Page, Route } from "playwright-core";
import type { BrowserConfig } from "../config/sections/browser.js";
import { ToolError } from "../core/tool-error.js";
import { errorMessage } from "../lib/errors.js";
import type { SafeHttpClient } from "../security/safe-http.js";
import { findChromium } from "./find-chromium.js";
import { GuardedProxy, type RefusedRequest } from "./guarded-proxy.js";

/**
 * Chromium's flags: headless, no sandbox (containers, Pi), nothing phoning home, and no way out but the guarded
 * proxy. An HTTP proxy carries TCP only, so what would travel over UDP is kept off: WebRTC's STUN and TURN
 * packets (they went straight to any address a page named, proxy or not) and QUIC. Chromium resolves no name
 * itself either: a request that somehow skipped the proxy fails instead of reaching the name's address.
 */
export const CHROMIUM_ARGS = [
  "--headless",
  "--no-sandbox",
  "--disable-gpu",
  "--disable-background-networking",
  "--disable-component-update",
  "--no-first-run",
  "--disable-sync",
  "--webrtc-ip-handling-policy=disable_non_proxied_udp",
  "--disable-quic",
  "--no-pings",
  "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1",
];

/** One session's browsing: its own context (cookies), page and guarded proxy. */
export interface BrowserSession {
  page: Page;
  /** Requests refused since the session's current action began. */
  refused: RefusedRequest[];
}

interface SessionState extends BrowserSession {
  context: BrowserContext;
  proxy: GuardedProxy;
  timer?: NodeJS.Timeout;
}

export interface BrowserServiceOptions {
  config: BrowserConfig;
  guard: SafeHttpClient;
  /** Tests: the idle time in ms instead of `config.idleSecs`. */
  idleMs?: number;
}

/**
 * The headless system Chromium, started on first use: one page per session (its own context and SSRF-guarded
 * proxy), closed after `browser.idleSecs` unused; the process closes with its last page and on shutdown.
 */
export class BrowserService {
  private browser: Promise<Browser> | null = null;
  private readonly sessions = new Map<string, Promise<SessionState>>();
  private readonly idleMs: number;

  constructor(private readonly options: BrowserServiceOptions) {
    this.idleMs = options.idleMs ?? options.config.idleSecs * 1000;
  }

  /** True while a Chromium process is running (or starting). */
  get running(): boolean {
    return this.browser !== null;
  }

  /** Sessions with an open page. */
  get openSessions(): string[] {
    return [...this.sessions.keys()];
  }

  /** The session's page (opened on first use), with its refusal list cleared for a new action. */
  async session(sessionKey: string): Promise<BrowserSession> {
    let pending = this.sessions.get(sessionKey);
    if (!pending) {
      pending = this.openSession();
      this.sessions.set(sessionKey, pending);
      pending.catch(() => this.sessions.delete(sessionKey));
    }
    const state = await pending;
    state.refused.length = 0;
    // No countdown while an action runs: a slow page must not be closed under it. `touch` re-arms it.
    if (state.timer) clearTimeout(state.timer);
    return state;
  }

  /** Starts the session's idle countdown; call when an action is done. */
  touch(sessionKey: string, state: BrowserSession): void {
    const session = state as SessionState;
    if (session.timer) clearTimeout(session.timer);
    session.timer = setTimeout(() => void this.closeSession(sessionKey), this.idleMs);
    session.timer.unref();
  }

  /** Closes a session's page; the browser process too when it was the last. */
  async closeSession(sessionKey: string): Promise<void> {
    const pending = this.sessions.get(sessionKey);
    if (!pending) return;
    this.sessions.delete(sessionKey);
    const state = await pending.catch(() => null);
    if (state) {
      if (state.timer) clearTimeout(state.timer);
      await state.context.close().catch(() => undefined);
      await state.proxy.close();
    }
    if (this.sessions.size === 0) await this.closeBrowser();
  }

  /** Closes every page and the browser process (shutdown). */
  async close(): Promise<void> {
    await Promise.all([...this.sessions.keys()].map((key) => this.closeSession(key)));
    await this.closeBrowser();
  }

  private async closeBrowser(): Promise<void> {
    const browser = this.browser;
    this.browser = null;
    if (browser) await (await browser.catch(() => null))?.close().catch(() => undefined);
  }

  private launch(): Promise<Browser> {
    if (!this.browser) {
      const launching = this.startChromium();
      this.browser = launching;
      launching.then(
        (browser) =>
          browser.on("disconnected", () => {
            if (this.browser === launching) this.browser = null;
          }),
        () => {
          if (this.browser === launching) this.browser = null;
        },
      );
    }
    return this.browser;
  }

  private async startChromium(): Promise<Browser> {
    const executablePath = findChromium(this.options.config.executablePath);
    if (!executablePath)
      throw new ToolError(
        "browser.not_installed",
        "No Chromium found (looked for chromium, chromium-browser, google-chrome on the PATH). Install it (apt install chromium) or set browser.executablePath.",
      );
    // Loaded on first use: a bot that never browses pays nothing for Playwright.
    const { chromium } = await import("playwright-core");
    // Requests Chromium makes outside every session's context (the default profile's own) get a guarded proxy
    // too, loopback included. Nobody asked for them, so a refusal is reported to no one.
    const proxy = await GuardedProxy.start(this.options.guard, () => undefined);
    try {
      const browser = await chromium.launch({
        executablePath,
        headless: true,
        args: CHROMIUM_ARGS,
        proxy: { server: proxy.url, bypass: "<-loopback>" },
      });
      browser.on("disconnected", () => void proxy.close());
      return browser;
    } catch (error) {
      await proxy.close();
      throw new ToolError(
        "browser.launch_failed",
        `Chromium at ${executablePath} did not start: ${errorMessage(error).split("\n")[0]}. Check browser.executablePath.`,
      );
    }
  }

  private async openSession(): Promise<SessionState> {
    const browser = await this.launch();
    const refused: RefusedRequest[] = [];
    const report = (entry: RefusedRequest) => {
      if (!refused.some((seen) => seen.url === entry.url)) refused.push(entry);
    };
    const proxy = await GuardedProxy.start(this.options.guard, report);
    try {
      const context = await browser.newContext({
        // `<-loopback>` sends loopback through the proxy too (Chromium bypasses it by default).
        proxy: { server: proxy.url, bypass: "<-loopback>" },
        serviceWorkers: "block",
        acceptDownloads: false,
      });
      await context.route("**/*", (route) => this.judgeRoute(route, report));
      const page = await context.newPage();
      return { context, page, proxy, refused };
    } catch (error) {
      await proxy.close();
      throw error;
    }
  }

  /** First-hop check of every request the page makes; the proxy judges again and catches what this can't see. */
  private async judgeRoute(route: Route, report: (entry: RefusedRequest) => void): Promise<void> {
    const url = route.request().url();
    try {
      await this.options.guard.resolveTarget(url);
    } catch (error) {
      report({
        url,
        code: (error as { code?: string }).code ?? "ssrf.refused",
        reason: errorMessage(error),
      });
      await route.abort("blockedbyclient").catch(() => undefined);
      return;
    }
    await route.continue().catch(() => undefined);
  }
}
