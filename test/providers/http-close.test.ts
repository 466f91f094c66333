// Closing the upstream pools at shutdown (engines/providers/http.ts closePools): the pools belong
// to the process, so a request still in flight (another in-process svc's, or one nobody waits for
// any more) is cut after the grace instead of holding the shutdown until its upstream timeout.
import { afterAll, describe, expect, it } from "vitest";
import { createServer, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { closePools, postJson } from "../../engines/providers/http";

const held = new Set<ServerResponse>();
const server = createServer((_req, res) => void held.add(res)); // never answers
afterAll(async () => {
  for (const r of held) r.destroy();
  await new Promise<void>((r) => server.close(() => r()));
});

describe("closePools", () => {
  it("cuts a request still in flight after the grace, rather than waiting for its timeout", async () => {
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
    // the upstream timeout (10 minutes) is far beyond the test's: only a cut ends this request
    const call = postJson("hung", base, "/chat/completions", {}, { model: "m" }, 600_000).then(() => "answered", (e) => e);
    await expect.poll(() => held.size).toBe(1);
    await closePools(50);
    const e = await call;
    expect(e).not.toBe("answered");
    expect(String(e?.message ?? e)).toMatch(/provider hung/);
  });
});
