import ipaddr from "ipaddr.js";

/** Hostnames refused before any DNS lookup. */
const LOCAL_HOSTNAMES = /(^|\.)(localhost|localdomain|internal|local)$/i;

/** Strips IPv6 brackets and a trailing root dot; lower-cases. */
export function normalizeHostname(hostname: string): string {
  let host = hostname.toLowerCase();
  if (host.startsWith("[") && host.endsWith("]")) host = host.slice(1, -1);
  while (host.endsWith(".")) host = host.slice(0, -1);
  return host;
}

/** True when the (normalized) hostname is an IP literal. */
export function isIpLiteral(host: string): boolean {
  return ipaddr.isValid(host) && (ipaddr.IPv6.isValid(host) || ipaddr.IPv4.isValidFourPartDecimal(host));
}

/**
 * Why an address must not be contacted, or null for a public unicast address. Only ipaddr.js's `unicast`
 * range passes: loopback, private, link-local (incl. 169.254.169.254 metadata), CGNAT, multicast, unspecified,
 * broadcast, reserved, unique-local, IPv4-mapped/translated IPv6, 6to4 and Teredo are all refused.
 */
export function addressProblem(address: string): string | null {
  let parsed: ipaddr.IPv4 | ipaddr.IPv6;
  try {
    parsed = ipaddr.parse(address);
  } catch {
    return "not an IP address";
  }
  const range = parsed.range();
  if (range === "unicast") return null;
  return range;
}

/** True for names like `localhost`, `foo.localhost`, `*.internal`, `*.local`. */
export function isLocalHostname(host: string): boolean {
  return LOCAL_HOSTNAMES.test(host);
}
