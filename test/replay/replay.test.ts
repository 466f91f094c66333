// What-if replay (docs/replay.md), end to end: a day of traffic on two keys sent through the real
// server (hour by hour on a settable clock), then plans replayed over it: an unchanged plan has no
// differences; a lower per_minute reports exactly what the live gate refuses once the plan is
// applied and the same day is sent again; a Deny statement on a provider; a price change to the cent.
import { describe, it, expect, beforeAll, afterAll } from "vitest";
import { mkdir, writeFile } from "node:fs/promises";
import path from "node:path";
import { installClock, realNow, setNow } from "./clock";
import { startEnv, standIn, type Env, type StandIn } from "../gateway/fixtures";
import { tempDir } from "../helpers/svc";
import { runCli } from "../helpers/cli";
import { generateSecret, hashSecret } from "../../engines/gateway/keys";
import { usageDbOf } from "../../engines/gateway/usage-report";

afterAll(installClock());

const HOUR = 3_600_000;
const DAY = 24 * HOUR;
// the recorded day: two UTC days back, so both it and the live day after it are in the past
const D = Math.floor(realNow() / DAY) * DAY - 2 * DAY;
setNow(D - 10 * 60_000);

let env: Env;
let up: StandIn;
const A = { id: "key-a", secret: generateSecret() };
const B = { id: "key-b", secret: generateSecret() };

// stand-in usage: 10 prompt + 5 completion tokens a request; at $1000 / $2000 per M: $0.02
function objects(o: { aPerMinute?: number; gptX?: [number, number]; denyOther?: boolean } = {}) {
  const [inP, outP] = o.gptX ?? [1000, 2000];
  return [
    { kind: "Provider", name: "up", spec: { type: "openai", baseUrl: up.baseUrl, timeoutSeconds: 5, models: [{ name: "gpt-x", inputPerMillion: inP, outputPerMillion: outP }] } },
    { kind: "Provider", name: "other", spec: { type: "openai", baseUrl: up.baseUrl, timeoutSeconds: 5, models: [{ name: "gpt-o", inputPerMillion: 1000, outputPerMillion: 2000 }] } },
    { kind: "ApiKey", name: A.id, spec: { name: "alpha", secretHash: `sha256:${hashSecret(A.secret)}`, organization_id: "acme", rate_limits: { per_minute: o.aPerMinute ?? 10 } } },
    {
      kind: "ApiKey",
      name: B.id,
      spec: {
        name: "beta",
        secretHash: `sha256:${hashSecret(B.secret)}`,
        organization_id: "acme",
        ...(o.denyOther ? { policy: { version: "2024-01-01", statements: [{ effect: "Deny", actions: ["*"], resources: ["provider:other"] }, { effect: "Allow", actions: ["*"], resources: ["*"] }] } } : {}),
      },
    },
  ];
}

const docs = (objs: ReturnType<typeof objects>) => objs.map((o) => ({ apiVersion: "svc/v1", kind: o.kind, metadata: { name: o.name }, spec: o.spec }));

async function manifestDir(objs: ReturnType<typeof objects>): Promise<string> {
  const dir = await tempDir("svc-replay-plan-");
  await mkdir(dir, { recursive: true });
  // JSON is YAML: one flow document each
  await writeFile(path.join(dir, "state.yaml"), docs(objs).map((d) => JSON.stringify(d)).join("\n---\n") + "\n");
  return dir;
}

interface Sent {
  key: "A" | "B";
  model: string;
  status: number;
}

/** The day's traffic from `start`: each hour, A sends 3 requests to gpt-x at once, B one to gpt-x
 * and one to gpt-o (served by Provider "other"). */
async function sendDay(start: number): Promise<Sent[]> {
  const out: Sent[] = [];
  const a = env.client(A.secret);
  const b = env.client(B.secret);
  const send = async (key: "A" | "B", model: string) => {
    try {
      await (key === "A" ? a : b).chat.completions.create({ model, messages: [{ role: "user", content: "hi" }] });
      out.push({ key, model, status: 200 });
    } catch (e: any) {
      out.push({ key, model, status: e?.status ?? -1 });
    }
  };
  for (let h = 0; h < 24; h++) {
    setNow(start + h * HOUR + 60_000);
    for (let i = 0; i < 3; i++) await send("A", "gpt-x");
    await send("B", "gpt-x");
    await send("B", "gpt-o");
  }
  return out;
}

const cli = (args: string[]) => runCli([...args, "--home", env.home, "--port", String(env.svc.port)], { SVC_ADMIN_KEY: undefined, SVC_PORT: undefined });
const windowArgs = ["--from", new Date(D).toISOString(), "--to", new Date(D + DAY).toISOString()];

async function planRoute(objs: ReturnType<typeof objects>) {
  const r = await fetch(`${env.url}/admin/config/plan`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ documents: docs(objs), from: new Date(D).toISOString(), to: new Date(D + DAY).toISOString() }),
  });
  return { status: r.status, json: (await r.json()) as any };
}

/** Audit ids of a key's entries in [from, to), in the store's order. */
async function auditIds(keyId: string, from: number, to: number): Promise<Array<{ id: string; status: string }>> {
  await env.gw.audit.flush();
  const db = usageDbOf(env.svc.svc.db);
  const rows = await db.all(`SELECT id, status FROM "AuditEntry" WHERE "apiKeyId" = ? AND timestamp >= ? AND timestamp < ? ORDER BY timestamp, id`, [keyId, new Date(from).toISOString().replace("Z", "+00:00"), new Date(to).toISOString().replace("Z", "+00:00")]);
  return rows.map((r) => ({ id: String(r.id), status: String(r.status) }));
}

let recorded: Sent[];

beforeAll(async () => {
  up = await standIn();
  env = await startEnv();
  const applied = await fetch(`${env.url}/admin/config/apply`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ documents: docs(objects()) }) });
  if (applied.status !== 200) throw new Error(await applied.text());
  recorded = await sendDay(D);
}, 60_000);

afterAll(async () => {
  await env?.stop();
  await up?.close();
});

describe("svc config plan --replay", () => {
  it("the recorded day went through: 120 requests, none refused", () => {
    expect(recorded).toHaveLength(120);
    expect(recorded.filter((s) => s.status !== 200)).toEqual([]);
  });

  it("an unchanged plan replays with no differences (exit 0 with --detailed-exitcode)", async () => {
    const dir = await manifestDir(objects());
    const r = await cli(["config", "plan", dir, ...windowArgs, "--detailed-exitcode"]);
    expect(r.code, r.stderr + r.stdout).toBe(0);
    expect(r.stdout).toContain("Replay: 120 requests, no differences.");
  });

  it("a Deny statement on a provider reports those requests refused (admin plan route)", async () => {
    const r = await planRoute(objects({ denyOther: true }));
    expect(r.status, JSON.stringify(r.json)).toBe(200);
    const rep = r.json.replay;
    expect(r.json.exitCode).toBe(4);
    expect(rep.totals.newRefusals).toBe(24);
    const b = rep.keys.find((k: any) => k.key === B.id);
    expect(b.newRefusals).toHaveLength(1);
    expect(b.newRefusals[0]).toMatchObject({ code: "policy_denied", count: 24 });
    expect(b.newRefusals[0].message).toContain("provider:other");
    // the first one: B's gpt-o request of the first hour
    const ids = await auditIds(B.id, D, D + DAY);
    expect(b.newRefusals[0].firstEntry).toBe(ids[1].id);
    expect(rep.keys.find((k: any) => k.key === A.id).newRefusals).toEqual([]);
    expect(rep.organizations).toEqual([expect.objectContaining({ id: "acme", keys: 2, newRefusals: 24 })]);
  });

  it("a bad window is the client's mistake: 400 naming the parameter", async () => {
    const r = await fetch(`${env.url}/admin/config/plan`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ documents: docs(objects()), replay: "a while" }) });
    expect(r.status).toBe(400);
    const j = (await r.json()) as any;
    expect(j.error).toMatchObject({ code: "invalid_request", param: "replay" });
  });

  it("a price change reports the spend difference to the cent", async () => {
    const r = await planRoute(objects({ gptX: [1500, 2500] }));
    const t = r.json.replay.totals;
    // 120 calls at $0.02 recorded; 96 gpt-x calls now at 10 x $1500/M + 5 x $2500/M = $0.0275
    expect(t.spend).toEqual({ recordedMicros: 2_400_000, currentMicros: 2_400_000, proposedMicros: 96 * 27_500 + 24 * 20_000 });
    expect(t.newRefusals).toBe(0);
    expect(r.json.exitCode).toBe(2);
    expect(r.json.replay.summary).toContain("spend $2.40 -> $3.12 (+$0.72)");
    const a = r.json.replay.keys.find((k: any) => k.key === A.id);
    expect(a.spend.proposedMicros - a.spend.currentMicros).toBe(72 * 7_500);
  });

  it("a lower per_minute reports exactly what the live gate refuses after apply", async () => {
    const dir = await manifestDir(objects({ aPerMinute: 2 }));
    const r = await cli(["config", "plan", dir, ...windowArgs, "-o", "json", "--detailed-exitcode"]);
    expect(r.code, r.stderr).toBe(4);
    const rep = JSON.parse(r.stdout).replay;
    const a = rep.keys.find((k: any) => k.key === A.id);
    expect(a.newRefusals).toHaveLength(1);
    const predicted = a.newRefusals[0];
    expect(predicted).toMatchObject({ code: "rate_limit_exceeded", limit: "per_minute=2" });
    const recordedIds = await auditIds(A.id, D, D + DAY);
    const predictedFirst = recordedIds.findIndex((x) => x.id === predicted.firstEntry);
    expect(rep.keys.find((k: any) => k.key === B.id).newRefusals).toEqual([]);

    const applied = await cli(["config", "apply", dir]);
    expect(applied.code, applied.stderr).toBe(0);
    const live = await sendDay(D + DAY);
    const liveA = live.filter((s) => s.key === "A");
    const refusedA = liveA.filter((s) => s.status === 429);
    // same counts, same first refusal, nothing else refused
    expect(refusedA.length).toBe(predicted.count);
    expect(liveA.findIndex((s) => s.status === 429)).toBe(predictedFirst);
    expect(live.filter((s) => s.key === "B" && s.status !== 200)).toEqual([]);
    // and the live gate's audit log agrees
    const liveIds = await auditIds(A.id, D + DAY, D + 2 * DAY);
    expect(liveIds.filter((x) => x.status === "rate_limit_exceeded").length).toBe(predicted.count);
    expect(liveIds.findIndex((x) => x.status === "rate_limit_exceeded")).toBe(predictedFirst);
  }, 30_000);
});
