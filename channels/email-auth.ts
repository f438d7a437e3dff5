/**
 * Who really sent a mail. From is forgeable: it counts only when the receiving server's
 * Authentication-Results (RFC 8601) header, from the configured authserv-id, shows DMARC pass for the From
 * domain, or SPF pass and DKIM pass both aligned with it.
 */

/** One `method=result` of an Authentication-Results header, with its properties (`header.from`, `smtp.mailfrom`…). */
export interface AuthResult {
  method: string;
  result: string;
  properties: Record<string, string>;
}

/** A parsed Authentication-Results header. */
export interface AuthResults {
  authservId: string;
  results: AuthResult[];
}

/** The verdict on a mail's sender: `verified` only with the rule above; `reason` says why (for logs and traces). */
export interface SenderVerdict {
  verified: boolean;
  reason: string;
}

/**
 * The most of one Authentication-Results value that is read. The receiving server's own header is a few hundred
 * characters; a longer one is a sender's, and reading its first part decides as well as reading it all would (a
 * forged header from authservId still counts as one of "ours", which two of make ambiguous).
 */
const MAX_RESULTS_CHARS = 16 * 1024;

/** Drops RFC 5322 comments `( … )` (nested, with `\` escapes) and quotes, in one pass. */
function withoutComments(value: string): string {
  let out = "";
  let depth = 0;
  let quoted = false;
  for (let index = 0; index < value.length; index++) {
    const char = value[index];
    if (char === "\\") {
      if (depth === 0) out += value.slice(index, index + 2);
      index++;
      continue;
    }
    if (quoted) {
      if (char === '"') quoted = false;
      else out += char;
      continue;
    }
    if (char === '"' && depth === 0) quoted = true;
    else if (char === "(") depth++;
    else if (char === ")" && depth > 0) depth--;
    else if (depth === 0) out += char;
  }
  return out;
}

/** Parses one Authentication-Results header value (its first MAX_RESULTS_CHARS); null when it has no authserv-id. */
export function parseAuthResults(value: string): AuthResults | null {
  const [head, ...statements] = withoutComments(value.slice(0, MAX_RESULTS_CHARS)).split(";");
  const authservId = head?.trim().split(/\s+/)[0]?.toLowerCase() ?? "";
  if (!authservId) return null;
  const results: AuthResult[] = [];
  for (const statement of statements) {
    const tokens = statement.trim().split(/\s+/).filter(Boolean);
    const [first, ...rest] = tokens;
    const equals = first?.indexOf("=") ?? -1;
    if (!first || equals <= 0) continue;
    const properties: Record<string, string> = {};
    for (const token of rest) {
      const at = token.indexOf("=");
      if (at > 0) properties[token.slice(0, at).toLowerCase()] = token.slice(at + 1).toLowerCase();
    }
    results.push({
      method: first.slice(0, equals).toLowerCase(),
      result: first.slice(equals + 1).toLowerCase(),
      properties,
    });
  }
  return { authservId, results };
}

/** The domain of an address or a bare domain, lower-cased (`user@Example.org` → `example.org`). */
function domainOf(value: string | undefined): string {
  if (!value) return "";
  const at = value.lastIndexOf("@");
  let domain = (at >= 0 ? value.slice(at + 1) : value).trim();
  if (domain.endsWith(">")) domain = domain.slice(0, -1);
  return domain.toLowerCase();
}

/** Relaxed alignment (RFC 7489 §3.1, without a public-suffix list): the same domain or a subdomain of it. */
function aligned(domain: string, fromDomain: string): boolean {
  return domain !== "" && (domain === fromDomain || domain.endsWith(`.${fromDomain}`));
}

/**
 * Decides whether the From address can be believed. `headers` are the mail's Authentication-Results values
 * (any number; a forger can add their own). Exactly one may come from `authservId` — two are ambiguous and
 * refused — and it must pass DMARC for the From domain, or SPF and DKIM aligned with it.
 */
export function verifySender(
  fromAddress: string,
  headers: string[],
  authservId: string | undefined,
): SenderVerdict {
  if (!authservId) return { verified: false, reason: "channels.email.authservId is not set" };
  const fromDomain = domainOf(fromAddress);
  if (!fromDomain) return { verified: false, reason: "no From address" };
  const ours = headers
    .map(parseAuthResults)
    .filter((parsed): parsed is AuthResults => parsed?.authservId === authservId.toLowerCase());
  if (ours.length === 0) return { verified: false, reason: `no Authentication-Results from ${authservId}` };
  if (ours.length > 1) {
    return { verified: false, reason: `${ours.length} Authentication-Results headers from ${authservId}` };
  }
  const { results } = ours[0]!;
  const passes = (method: string) =>
    results.filter((result) => result.method === method && result.result === "pass");
  const dmarc = passes("dmarc").some((result) => {
    const domain = domainOf(result.properties["header.from"]);
    return domain === "" || domain === fromDomain;
  });
  if (dmarc) return { verified: true, reason: `dmarc=pass for ${fromDomain}` };
  const spf = passes("spf").some((result) =>
    aligned(domainOf(result.properties["smtp.mailfrom"] ?? result.properties["smtp.helo"]), fromDomain),
  );
  const dkim = passes("dkim").some((result) =>
    aligned(domainOf(result.properties["header.d"] ?? result.properties["header.i"]), fromDomain),
  );
  if (spf && dkim) return { verified: true, reason: `spf=pass and dkim=pass aligned with ${fromDomain}` };
  return {
    verified: false,
    reason: `no dmarc=pass, nor spf=pass and dkim=pass aligned with ${fromDomain}, from ${authservId}`,
  };
}
