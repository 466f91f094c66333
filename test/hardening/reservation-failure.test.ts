// A key with limits is forwarded while its reservation is written to the journal (limits/wal.ts),
// but no answer leaves before it is written: when the write fails, the client gets 503 (not the
// upstream's answer), nothing is counted as spent, and the audit says why. Once the journal can
// be written again, requests pass. The failure: the journal's next files cannot be opened
// (directories stand in their place), as on a full or read-only disk.
import { mkdirSync, rmSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { expectError, provider, standIn, startEnv, type Env, type StandIn } from "../gateway/fixtures";

let env: Env;
let up: StandIn;
let key: { id: string; secret: string };

beforeAll(async () => {
  up = await standIn();
  env = await startEnv();
  await env.apply([provider("up", up, [{ name: "gpt-x", inputPerMillion: 1, outputPerMillion: 2 }])]);
  key = await env.key({ budget_limits: { daily: 5 } });
});
afterAll(async () => {
  await env?.stop();
  await up?.close();
});

/** Make the journal unwritable from the next group commit on; returns the undo. */
function breakJournal(): () => void {
  const wal = (env.gw.limits as any).store.wal; // internals: the test stands in for a failing disk
  const file = (g: number) => `${env.svc.svc.db.sqlite.name}.reservations-${g}`;
  wal.closeJournal();
  wal.gen++; // the next commit opens a new file, and every one after a failure too
  const dirs = [0, 1, 2, 3, 4].map((i) => file(wal.gen + i));
  for (const d of dirs) mkdirSync(d);
  return () => {
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  };
}
const usage = async () => (await env.api("GET", `/v1/api-keys/${key.id}/usage`)).json;

describe("a reservation that cannot be written", () => {
  it("refuses the answer with 503 (streamed or not), counts nothing, and recovers", async () => {
    const client = env.client(key.secret);
    const body = { model: "gpt-x", messages: [{ role: "user" as const, content: "hi" }], max_tokens: 5 };
    await client.chat.completions.create(body); // a request that counts, before the failure
    const before = await usage();

    const undo = breakJournal();
    try {
      const e = await expectError(client.chat.completions.create(body), 503, "internal_error");
      expect(e.message).toMatch(/usage limits could not be recorded/);
      const s = await expectError(
        (async () => {
          for await (const _ of await client.chat.completions.create({ ...body, stream: true }));
        })(),
        503,
        "internal_error",
      );
      expect(s.message).toMatch(/usage limits could not be recorded/);
    } finally {
      undo();
    }

    const after = await usage();
    expect(after).toEqual(before);
    await env.gw.audit?.flush();
    const rows = await env.svc.svc.db.prisma.auditEntry.findMany({ where: { apiKeyId: key.id }, orderBy: { timestamp: "asc" } });
    expect(rows.map((r) => r.status)).toEqual(["success", "internal_error", "internal_error"]);

    const ok = await client.chat.completions.create(body);
    expect(ok.choices[0].message.content).toBeTruthy();
  });
});
