// A local address that is not loopback (this machine's own interface): binding svc there makes
// the tests' own requests non-loopback, which is how "another machine" is exercised here.
import os from "node:os";

/** The first IPv4 interface address; with `ipv6`, else a global IPv6 one (never link-local). */
export function nonLoopbackAddress(opts: { ipv6?: boolean } = {}): string | null {
  const all = Object.values(os.networkInterfaces()).flat().filter((a) => a && !a.internal);
  const v4 = all.find((a) => a!.family === "IPv4");
  const v6 = opts.ipv6 ? all.find((a) => a!.family === "IPv6" && !a!.address.startsWith("fe80")) : undefined;
  return (v4 ?? v6)?.address ?? null;
}
