// A local address that is not loopback (this machine's own interface), as test/agents/remote.test.ts
// and test/platform/loopback.test.ts use: binding svc there makes our own requests non-loopback.
import os from "node:os";

export function nonLoopbackAddress(): string | null {
  const all = Object.values(os.networkInterfaces()).flat().filter((a) => a && !a.internal);
  return all.find((a) => a!.family === "IPv4")?.address ?? null;
}
