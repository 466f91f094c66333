// kill -9 gives no key a fresh allowance (issue 9 item 3): a real `svc serve` process, a
// loopback stand-in upstream, keys with a total budget and with max_requests. The process is
// killed with SIGKILL right after answers arrive and while requests are in flight, restarted on
// the same home, and the next request is refused exactly when the limits say; every answered
// request has its audit row.
import { mkdirSync, writeFileSync } from "node:fs";
import path from "node:path";
import Database from "better-sqlite3";
import OpenAI from "openai";
import { afterAll, describe, expect, it } from "vitest";
import { tempDir } from "../helpers/svc";
import { until } from "../helpers/http";
import { standInUpstream, startChild, type SvcChild } from "./crash-child";

const ADMIN = "sk-svc-crashlimitstestadminkey0000000000000000";
const children: SvcChild[] = [];
let up: Awaited<ReturnType<typeof standInUpstream>> | undefined;
afterAll(async () => {
  for (const c of children) await c.stop().catch(() => undefined);
  await up?.close();
});

// Prices: 5,000 USD per million tokens in and out, i.e. 0.005 USD a token. A request "hi" with
// max_tokens 10 reserves (9 prompt estimate + 10) tokens = 0.095 USD; the stand-in bills 5 + 10
// tokens = 0.075 USD.
async function setup() {
  up ??= await standInUpstream({ prompt: 5, completion: 10 });
  const home = await tempDir("svc-crash-");
  const cfg = path.join(home, "cfg");
  mkdirSync(cfg);
  writeFileSync(path.join(cfg, "p.yaml"), `apiVersion: svc/v1
kind: Provider
metadata: {name: standin}
spec: {type: openai, baseUrl: "${up.baseUrl}", models: [{name: gpt-standin, inputPerMillion: 5000, outputPerMillion: 5000}]}
`);
  const start = async () => {
    const c = await startChild(home, cfg, ADMIN);
    children.push(c);
    return c;
  };
  return { home, start };
}

async function post(url: string, p: string, body: unknown) {
  const r = await fetch(`${url}${p}`, { method: "POST", headers: { authorization: `Bearer ${ADMIN}`, "content-type": "application/json" }, body: JSON.stringify(body) });
  const j: any = await r.json();
  if (r.status >= 300) throw new Error(`${p}: ${r.status} ${JSON.stringify(j)}`);
  return j;
}

/** One chat request; resolves to the request id when answered, else to the error's status/code. */
async function ask(url: string, key: string): Promise<{ ok: true; requestId: string } | { ok: false; status?: number; code?: string }> {
  const client = new OpenAI({ apiKey: key, baseURL: `${url}/v1`, maxRetries: 0 });
  try {
    const { response } = await client.chat.completions.create({ model: "gpt-standin", max_tokens: 10, messages: [{ role: "user", content: "hi" }] }).withResponse();
    return { ok: true, requestId: response.headers.get("x-request-id") ?? "" };
  } catch (e) {
    const x = e as { status?: number; code?: string };
    return { ok: false, status: x.status, code: x.code };
  }
}

function auditRows(home: string, keyId: string): Array<{ requestId: string; status: string; costMicros: number }> {
  const db = new Database(path.join(home, "svc.db"), { readonly: true });
  try {
    return db.prepare(`SELECT requestId, status, costMicros FROM AuditEntry WHERE apiKeyId = ?`).all(keyId) as any;
  } finally {
    db.close();
  }
}

describe("limits survive kill -9", () => {
  it("a spent budget stays spent: the next request is refused exactly when it should be", async () => {
    const { home, start } = await setup();
    let svc = await start();
    const key = await post(svc.url, "/v1/api-keys", { name: "budget", key_type: "user", budget_limits: { total: 0.3 } });
    const answered: string[] = [];
    for (let i = 0; i < 3; i++) {
      const r = await ask(svc.url, key.api_key);
      expect(r.ok).toBe(true);
      if (r.ok) answered.push(r.requestId);
    }
    await svc.kill9(); // right after the third answer: nothing flushed since

    svc = await start();
    // 3 × 0.075 (or, if unsettled on disk, 3 × 0.095 = 0.285) is under 0.30: one more fits
    const fourth = await ask(svc.url, key.api_key);
    expect(fourth.ok).toBe(true);
    expect(await ask(svc.url, key.api_key)).toMatchObject({ ok: false, status: 402, code: "budget_exceeded" });
    if (fourth.ok) answered.push(fourth.requestId);
    await svc.kill9();

    svc = await start();
    expect(await ask(svc.url, key.api_key)).toMatchObject({ ok: false, status: 402, code: "budget_exceeded" });
    const ids = new Set(auditRows(home, key.id).map((r) => r.requestId));
    for (const id of answered) expect(ids.has(id), `audit row of ${id}`).toBe(true);
    await svc.stop();
  }, 120_000);

  it("a temporary key's max_requests is not refreshed, whether killed after answers or with requests in flight", async () => {
    const { home, start } = await setup();
    let svc = await start();
    const tmp = await post(svc.url, "/v1/api-keys/temporary", { expires_in: 3600, permissions: { max_requests: 5 } });
    expect((await ask(svc.url, tmp.api_key)).ok).toBe(true);
    expect((await ask(svc.url, tmp.api_key)).ok).toBe(true);
    await svc.kill9(); // 2 used, answered

    svc = await start();
    up!.hold();
    const before = up!.received();
    const inFlight = [ask(svc.url, tmp.api_key), ask(svc.url, tmp.api_key)];
    await until(() => up!.received() >= before + 2, 20_000); // forwarded: their reservations are on disk
    await svc.kill9(); // 2 more in flight
    expect((await Promise.all(inFlight)).every((r) => !r.ok)).toBe(true);
    up!.release();

    svc = await start();
    // 2 answered + 2 in flight at the crash (counted: a crash never hands back a request) = 4 of 5
    expect((await ask(svc.url, tmp.api_key)).ok).toBe(true);
    expect(await ask(svc.url, tmp.api_key)).toMatchObject({ ok: false, status: 402, code: "quota_exceeded" });
    await svc.stop();
    // one row per admitted request: answered ones as "success" (or "interrupted" when the crash
    // came before their row was written), the two the crash cut as "interrupted", at their
    // reserved cost
    const all = auditRows(home, tmp.id);
    expect(all.filter((r) => r.status === "quota_exceeded").length).toBe(1); // the refusal
    const rows = all.filter((r) => r.status !== "quota_exceeded");
    expect(rows.length).toBe(5);
    expect(rows.every((r) => r.status === "success" || r.status === "interrupted")).toBe(true);
    const interrupted = rows.filter((r) => r.status === "interrupted");
    expect(interrupted.length).toBeGreaterThanOrEqual(2);
    for (const r of interrupted) expect(Number(r.costMicros)).toBe(95_000);
  }, 120_000);

  it("a rate window is not refreshed by kill -9", async () => {
    const { start } = await setup();
    let svc = await start();
    const key = await post(svc.url, "/v1/api-keys", { name: "rate", key_type: "user", rate_limits: { per_hour: 3 } });
    for (let i = 0; i < 3; i++) expect((await ask(svc.url, key.api_key)).ok).toBe(true);
    await svc.kill9();
    svc = await start();
    expect(await ask(svc.url, key.api_key)).toMatchObject({ ok: false, status: 429, code: "rate_limit_exceeded" });
    await svc.stop();
  }, 120_000);

  it("every answered request of a key with limits has its audit row after kill -9 under load", async () => {
    const { home, start } = await setup();
    let svc = await start();
    const key = await post(svc.url, "/v1/api-keys", { name: "load", key_type: "user", budget_limits: { monthly: 1000 } });
    const results = await Promise.all(Array.from({ length: 60 }, () => ask(svc.url, key.api_key)));
    await svc.kill9();
    const answered = results.flatMap((r) => (r.ok ? [r.requestId] : []));
    expect(answered.length).toBe(60);

    svc = await start();
    await svc.stop();
    const rows = auditRows(home, key.id);
    const ids = new Set(rows.map((r) => r.requestId));
    for (const id of answered) expect(ids.has(id), `audit row of ${id}`).toBe(true);
    expect(rows.length).toBe(60); // one row each, none twice
  }, 120_000);
});
