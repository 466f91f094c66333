// A key with limits is forwarded while its reservation row commits (limits/wal.ts), but no answer
// leaves before the row is on disk: when the commit fails, the client gets 503 (not the upstream's
// answer), nothing is counted as spent, and the audit says why. Once the store writes again,
// requests pass. The failure is a temporary trigger on svc's own write connection.
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

const sqlite = () => env.svc.svc.db.sqlite;
const usage = async () => (await env.api("GET", `/v1/api-keys/${key.id}/usage`)).json;

describe("a reservation that cannot be written", () => {
  it("refuses the answer with 503 (streamed or not), counts nothing, and recovers", async () => {
    const client = env.client(key.secret);
    const body = { model: "gpt-x", messages: [{ role: "user" as const, content: "hi" }], max_tokens: 5 };
    await client.chat.completions.create(body); // a request that counts, before the failure
    const before = await usage();

    sqlite().exec(`CREATE TEMP TRIGGER no_reservations BEFORE INSERT ON "Reservation" BEGIN SELECT RAISE(ABORT, 'disk is full'); END`);
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
      sqlite().exec(`DROP TRIGGER no_reservations`);
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
