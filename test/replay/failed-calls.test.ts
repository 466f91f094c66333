// Recorded failures replayed as the live gate counted them: a stream that failed mid-answer was
// settled by the live pipeline with the tokens it had counted (pipeline.ts finish), so a token
// limit the plan adds reaches its end as early in the replay as it does live once applied. Also:
// a window the route cannot represent is the operator's mistake (400), not a 500.
import { describe, it, expect, beforeAll, afterAll } from "vitest";
import { installClock, realNow, setNow } from "./clock";
import { startEnv, standIn, type Env, type StandIn } from "../gateway/fixtures";
import { generateSecret, hashSecret } from "../../engines/gateway/keys";
import { usageDbOf } from "../../engines/gateway/usage-report";
import { replayPages, type ReplayEntry, type ReplayObject } from "../../engines/gateway/replay";

afterAll(installClock());

const HOUR = 3_600_000;
const DAY = 24 * HOUR;
const D = Math.floor(realNow() / DAY) * DAY - 2 * DAY;
setNow(D - 10 * 60_000);

let env: Env;
let up: StandIn;
const K = { id: "key-f", secret: generateSecret() };

function objects(tokensDaily?: number) {
  return [
    {
      kind: "Provider",
      name: "up",
      spec: {
        type: "openai",
        baseUrl: up.baseUrl,
        timeoutSeconds: 5,
        models: [
          { name: "gpt-x", inputPerMillion: 1000, outputPerMillion: 2000 },
          // the stand-in breaks this model's streams after the first words
          { name: "gpt-mid", upstreamName: "mode:midstream", inputPerMillion: 1000, outputPerMillion: 2000 },
        ],
      },
    },
    { kind: "ApiKey", name: K.id, spec: { name: "f", secretHash: `sha256:${hashSecret(K.secret)}`, ...(tokensDaily ? { token_limits: { daily: tokensDaily } } : {}) } },
  ];
}
const docs = (objs: ReturnType<typeof objects>) => objs.map((o) => ({ apiVersion: "svc/v1", kind: o.kind, metadata: { name: o.name }, spec: o.spec }));

/** 3 streams that fail mid-answer, then 8 calls that succeed: the HTTP status of each. */
async function sendDay(start: number): Promise<number[]> {
  setNow(start + 60_000);
  const c = env.client(K.secret);
  const out: number[] = [];
  for (let i = 0; i < 3; i++) {
    try {
      const s = await c.chat.completions.create({ model: "gpt-mid", messages: [{ role: "user", content: "hello there" }], stream: true });
      for await (const _ of s) void _;
      out.push(200);
    } catch (e: any) {
      out.push(e?.status ?? -1);
    }
  }
  for (let i = 0; i < 8; i++) {
    try {
      await c.chat.completions.create({ model: "gpt-x", messages: [{ role: "user", content: "hi" }] });
      out.push(200);
    } catch (e: any) {
      out.push(e?.status ?? -1);
    }
  }
  return out;
}

async function rows(from: number, to: number) {
  await env.gw.audit.flush();
  const db = usageDbOf(env.svc.svc.db);
  return db.all(`SELECT id, status, promptTokens, completionTokens FROM "AuditEntry" WHERE "apiKeyId" = ? AND timestamp >= ? AND timestamp < ? ORDER BY timestamp, id`, [K.id, new Date(from).toISOString().replace("Z", "+00:00"), new Date(to).toISOString().replace("Z", "+00:00")]);
}

const plan = (body: Record<string, unknown>) =>
  fetch(`${env.url}/admin/config/plan`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) }).then(async (r) => ({ status: r.status, json: (await r.json()) as any }));

beforeAll(async () => {
  up = await standIn();
  env = await startEnv();
  const r = await fetch(`${env.url}/admin/config/apply`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ documents: docs(objects()) }) });
  if (r.status !== 200) throw new Error(await r.text());
}, 60_000);

afterAll(async () => {
  await env?.stop();
  await up?.close();
});

describe("replay of failed calls", () => {
  it("streams that failed mid-answer count toward a token limit as the live gate counts them", async () => {
    const recorded = await sendDay(D);
    expect(recorded.slice(3)).toEqual(Array(8).fill(200));
    const rec = await rows(D, D + DAY);
    expect(rec).toHaveLength(11);
    // the failed streams were recorded with the tokens the live gate settled them with
    const failed = rec.slice(0, 3);
    for (const f of failed) expect(f.status).toBe("upstream_error");
    const mid = Number(failed[0].promptTokens) + Number(failed[0].completionTokens);
    expect(mid).toBeGreaterThan(0);
    // room for the 3 failed streams and 3 of the 15-token calls: the 4th call is refused live
    const limit = 3 * mid + 3 * 15;
    const p = await plan({ documents: docs(objects(limit)), from: new Date(D).toISOString(), to: new Date(D + DAY).toISOString() });
    expect(p.status, JSON.stringify(p.json)).toBe(200);
    const k = p.json.replay.keys.find((x: any) => x.key === K.id);
    const predicted = k.newRefusals.reduce((n: number, r: any) => n + r.count, 0);

    const applied = await fetch(`${env.url}/admin/config/apply`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ documents: docs(objects(limit)) }) });
    expect(applied.status).toBe(200);
    const live = await sendDay(D + DAY);
    const refusedLive = live.filter((s) => s === 402);
    expect(refusedLive.length).toBeGreaterThan(0);
    expect(predicted).toBe(refusedLive.length);
    expect(k.newRefusals[0]).toMatchObject({ code: "quota_exceeded", limit: `daily=${limit}` });
    expect(rec.findIndex((x: any) => x.id === k.newRefusals[0].firstEntry)).toBe(live.indexOf(402));
  }, 30_000);

  it("a duration past the dates JavaScript has is 400 naming the parameter, not a 500", async () => {
    for (const replay of ["99999999999999999999d", "9999999999w"]) {
      const r = await plan({ documents: docs(objects()), replay });
      expect(r.status, JSON.stringify(r.json)).toBe(400);
      expect(r.json.error).toMatchObject({ code: "invalid_request", param: "replay" });
    }
    // a day the month does not have is a mistake, not the first days of the next month
    const r = await plan({ documents: docs(objects()), from: "2026-02-30", to: "2026-03-05T00:00:00Z" });
    expect(r.status).toBe(400);
    expect(r.json.error).toMatchObject({ code: "invalid_request", param: "from" });
  });
});

describe("replay of calls that ended before their answer", () => {
  it("a call cancelled before the upstream answered does not use up max_requests (the live gate gave it back)", async () => {
    const at = new Date(0).toISOString();
    const state = (max?: number): ReplayObject[] => [
      { kind: "Provider", name: "p", owner: "config:t", createdAt: at, spec: { type: "openai", baseUrl: "http://127.0.0.1:9", models: [{ name: "m", inputPerMillion: 1, outputPerMillion: 1 }] } },
      { kind: "ApiKey", name: "k", owner: "config:t", createdAt: at, spec: { secretHash: `sha256:${hashSecret("k")}`, ...(max ? { permissions: { max_requests: max } } : {}) } },
    ];
    const day = Date.parse("2026-11-20T00:00:00Z");
    const e = (i: number, status: string, tokens: number): ReplayEntry => ({ id: `aud_${i}`, ts: day + i * 1000, keyId: "k", action: "chat.completions", model: "m", provider: "p", status, promptTokens: tokens, completionTokens: tokens, costMicros: 0, ip: null });
    // two calls the client gave up on (refused(): settled at zero, served=false), then three answered
    const page = [e(0, "cancelled", 0), e(1, "upstream_timeout", 0), e(2, "success", 10), e(3, "success", 10), e(4, "success", 10)];
    const r = await replayPages([page], state(), state(3), { worker: "never" });
    expect(r.totals.newRefusals).toBe(0);
  });
});
