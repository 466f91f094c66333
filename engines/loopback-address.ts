// Is an address on the loopback range (127.0.0.0/8, ::1, IPv4-mapped forms included)?
import ipaddr from "ipaddr.js";

export function isLoopbackAddress(addr: string | undefined): boolean {
  if (!addr) return false;
  try {
    let ip = ipaddr.parse(addr);
    if (ip.kind() === "ipv6" && (ip as ipaddr.IPv6).isIPv4MappedAddress()) ip = (ip as ipaddr.IPv6).toIPv4Address();
    return ip.range() === "loopback";
  } catch {
    return false;
  }
}
