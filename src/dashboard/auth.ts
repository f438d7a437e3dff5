import { createHash, createHmac, timingSafeEqual } from "node:crypto";
import type { MiddlewareHandler } from "hono";
import { getCookie, setCookie } from "hono/cookie";

/** The sign-in cookie: HTTP-only, SameSite=Strict, scoped to the whole site. */
export const SESSION_COOKIE = "magpie_dashboard";

/** Compares two secrets in constant time (digests first, so lengths don't leak either). */
export function sameSecret(given: string, expected: string): boolean {
  const digest = (value: string) => createHash("sha256").update(value).digest();
  return timingSafeEqual(digest(given), digest(expected));
}

/** What the cookie holds: derived from the token, so the token itself never sits in the browser's jar. */
export function sessionValue(token: string): string {
  return createHmac("sha256", token).update("magpie-dashboard-session").digest("base64url");
}

/**
 * Signs requests in: `?token=` on a GET sets the cookie and redirects to the same page without the token;
 * `Authorization: Bearer <token>` works for scripts; the cookie for the browser afterwards. Anything else: 401.
 * Cookie-signed state-changing requests must come from this origin (CSRF).
 */
export function dashboardAuth(token: string): MiddlewareHandler {
  const expectedSession = sessionValue(token);
  return async (c, next) => {
    const queryToken = c.req.query("token");
    if (queryToken !== undefined && c.req.method === "GET") {
      if (!sameSecret(queryToken, token)) return c.text("Unauthorized: wrong token.", 401);
      setCookie(c, SESSION_COOKIE, expectedSession, {
        httpOnly: true,
        sameSite: "Strict",
        path: "/",
        secure: new URL(c.req.url).protocol === "https:",
      });
      const url = new URL(c.req.url);
      url.searchParams.delete("token");
      return c.redirect(`${url.pathname}${url.search}`, 303);
    }
    const authorization = c.req.header("authorization");
    if (authorization !== undefined) {
      const bearer = /^Bearer (.+)$/i.exec(authorization)?.[1];
      if (bearer === undefined || !sameSecret(bearer, token)) return c.text("Unauthorized.", 401);
      // A script's header is not sent by a browser on its own: no CSRF check needed.
      return next();
    }
    const cookie = getCookie(c, SESSION_COOKIE);
    if (cookie === undefined || !sameSecret(cookie, expectedSession)) {
      return c.text("Unauthorized: open /?token=<your dashboard token> to sign in.", 401);
    }
    if (!isSafeMethod(c.req.method) && !fromSameOrigin(c.req.header("origin"), c.req.header("host"))) {
      return c.text("Forbidden: cross-origin request refused.", 403);
    }
    return next();
  };
}

function isSafeMethod(method: string): boolean {
  return method === "GET" || method === "HEAD" || method === "OPTIONS";
}

/** Browsers send Origin on every POST; it must name this host (behind a proxy, keep the Host header). */
function fromSameOrigin(origin: string | undefined, host: string | undefined): boolean {
  if (!origin || !host) return false;
  try {
    return new URL(origin).host === host;
  } catch {
    return false;
  }
}
