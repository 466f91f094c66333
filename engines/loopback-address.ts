// Is an address on the loopback range (127.0.0.0/8, ::1, IPv4-mapped forms included)?
import ipaddr from "ipaddr.js";

export type ParsedIp = ipaddr.IPv4 | ipaddr.IPv6;

// Parsed socket addresses, memoized: a client sends many requests from one address, and
// ipaddr.parse was a visible per-request cost (twice: loopback check and IP allowlist).
// Addresses are not secrets. Bounded: cleared when full.
const parsed = new Map<string, ParsedIp | null>();
const MAX_PARSED = 4096;

/**
 * An address as text with a trailing dotted quad written as two hex groups. ipaddr.js reads
 * "::a.b.c.d" as the IPv4-mapped ::ffff:a.b.c.d, but it is the IPv4-compatible ::/96 address, and
 * it is how Node prints a peer at ::7f00:1: read as written, "::127.0.0.1" became 127.0.0.1 (a
 * remote peer given loopback trust; "::10.0.0.1" matched a 10.0.0.0/8 allowlist). In hex form
 * only a real ::ffff: prefix is unwrapped.
 */
export function hexForm(addr: string): string {
  const m = /^(.*:)(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/.exec(addr);
  if (!m) return addr;
  const [a, b, c, d] = m.slice(2).map(Number);
  if (a > 255 || b > 255 || c > 255 || d > 255) return addr;
  return `${m[1]}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
}

/** Parse an address (IPv4-mapped IPv6 unwrapped to IPv4; an IPv4-compatible ::a.b.c.d stays
 * IPv6, see hexForm); null when it is not an address. The result is shared: do not mutate it. */
export function parseIp(addr: string): ParsedIp | null {
  let ip = parsed.get(addr);
  if (ip !== undefined) return ip;
  try {
    ip = ipaddr.parse(hexForm(addr));
    if (ip.kind() === "ipv6" && (ip as ipaddr.IPv6).isIPv4MappedAddress()) ip = (ip as ipaddr.IPv6).toIPv4Address();
  } catch {
    ip = null;
  }
  if (parsed.size >= MAX_PARSED) parsed.clear();
  parsed.set(addr, ip);
  return ip;
}

// The verdict too: range() walks every special range on each call (~3 µs a request).
const loopback = new Map<string, boolean>();

export function isLoopbackAddress(addr: string | undefined): boolean {
  if (!addr) return false;
  let v = loopback.get(addr);
  if (v === undefined) {
    const ip = parseIp(addr);
    v = ip !== null && ip.range() === "loopback";
    if (loopback.size >= MAX_PARSED) loopback.clear();
    loopback.set(addr, v);
  }
  return v;
}
