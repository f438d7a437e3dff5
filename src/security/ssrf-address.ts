import ipaddr from "ipaddr.js";
import { MagpieError } from "../lib/errors.js";

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

/** Addresses that stay refused for a hostname entry of allowHosts: cloud metadata endpoints. */
const METADATA_ADDRESSES = new Set(["169.254.169.254", "fd00:ec2::254", "100.100.100.200"]);

/**
 * `security.ssrf.allowHosts`: private hosts the owner wants reachable. An IP or CIDR entry opens exactly those
 * addresses (IPv4-mapped IPv6 forms count as their IPv4 address); a hostname entry opens that name (not its
 * subdomains) whatever it resolves to, except the cloud metadata addresses. Nothing else is widened.
 */
export class HostAllowList {
  private readonly ranges: Array<[ipaddr.IPv4 | ipaddr.IPv6, number]> = [];
  private readonly hostnames = new Set<string>();
  readonly entries: readonly string[];

  constructor(entries: readonly string[] = []) {
    this.entries = entries;
    for (const raw of entries) {
      const entry = normalizeHostname(raw.trim());
      if (entry.includes("/")) {
        let cidr: [ipaddr.IPv4 | ipaddr.IPv6, number];
        try {
          cidr = ipaddr.parseCIDR(entry);
        } catch {
          throw new MagpieError(
            "config.ssrf_allow_host_invalid",
            `security.ssrf.allowHosts: '${raw}' is not a valid CIDR. Write it like 192.168.1.0/24 or fd00::/8.`,
          );
        }
        const [range, bits] = cidr;
        this.ranges.push(
          range.kind() === "ipv6" && (range as ipaddr.IPv6).isIPv4MappedAddress() && bits >= 96
            ? [(range as ipaddr.IPv6).toIPv4Address(), bits - 96]
            : cidr,
        );
      } else if (ipaddr.isValid(entry)) {
        const address = ipaddr.process(entry);
        this.ranges.push([address, address.kind() === "ipv4" ? 32 : 128]);
      } else if (/^[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)*$/.test(entry)) {
        this.hostnames.add(entry);
      } else {
        throw new MagpieError(
          "config.ssrf_allow_host_invalid",
          `security.ssrf.allowHosts: '${raw}' is neither a hostname, an IP address nor a CIDR.`,
        );
      }
    }
  }

  get isEmpty(): boolean {
    return this.entries.length === 0;
  }

  /** True when the (normalized) hostname is listed by name. */
  allowsName(host: string): boolean {
    return this.hostnames.has(host);
  }

  /** True when `address` may be contacted for `host` although it is not public. */
  allowsAddress(host: string, address: string): boolean {
    let parsed: ipaddr.IPv4 | ipaddr.IPv6;
    try {
      parsed = ipaddr.process(address);
    } catch {
      return false;
    }
    if (this.allowsName(host) && !METADATA_ADDRESSES.has(parsed.toString())) return true;
    return this.ranges.some(([range, bits]) => parsed.kind() === range.kind() && parsed.match(range, bits));
  }
}
