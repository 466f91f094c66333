// The PostgreSQL store (SVC_DATABASE_URL): one svc on a throwaway PostgreSQL 15 serves keys,
// limits and the audit log like the SQLite default, and keeps them across a restart; both Prisma
// schemas declare the same models and fields.
import { describe, it, expect, beforeAll, afterAll } from "vitest";
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import pg from "pg";
import { missingServices, startPostgres, type Service } from "../helpers/services";
import { startEnv, standIn, provider, expectError, type Env, type StandIn } from "../gateway/fixtures";
import { tempDir } from "../helpers/svc";

const missing = missingServices();
if (missing) console.warn(`test/scale skipped: ${missing}`);

describe("prisma schemas", () => {
  it("prisma/postgres/schema.prisma is derived from prisma/schema.prisma (same models and fields)", () => {
    execFileSync(process.execPath, ["prisma/postgres/derive.mjs", "--check"], { stdio: "pipe" });
    const models = (f: string) =>
      [...readFileSync(f, "utf8").matchAll(/^model (\w+) \{([\s\S]*?)^\}/gm)].map((m) => [m[1], [...m[2].matchAll(/^\s+(\w+)\s+\w/gm)].map((x) => x[1])]);
    expect(models("prisma/postgres/schema.prisma")).toEqual(models("prisma/schema.prisma"));
  });
});

describe.skipIf(!!missing)("PostgreSQL store", () => {
  let pgs: Service;
  let up: StandIn;
  let env: Env;
  let home: string;
  const saved = { ...process.env };

  beforeAll(async () => {
    pgs = await startPostgres();
    process.env.SVC_DATABASE_URL = pgs.url;
    up = await standIn({ promptTokens: 2, completionTokens: 5 });
    home = await tempDir("svc-pg-");
    env = await startEnv({ home });
    await env.apply([provider("up", up, [{ name: "gpt-x", inputPerMillion: 1, outputPerMillion: 1 }])]);
  }, 60_000);
  afterAll(async () => {
    await env?.stop();
    await up?.close();
    await pgs?.stop();
    process.env = saved;
  });

  it("keys, rate limits and audit entries are written to PostgreSQL and survive a restart", async () => {
    const k = await env.key({ rate_limits: { per_minute: 3, burst: 3 } });
    const c = env.client(k.secret);
    for (let i = 0; i < 3; i++) await c.chat.completions.create({ model: "gpt-x", messages: [{ role: "user", content: "hi" }] });
    await expectError(c.chat.completions.create({ model: "gpt-x", messages: [{ role: "user", content: "hi" }] }), 429, "rate_limit_exceeded");
    await env.stop();

    const db = new pg.Client({ connectionString: pgs.url });
    await db.connect();
    try {
      const keys = await db.query(`SELECT name FROM resource WHERE kind = 'ApiKey'`);
      expect(keys.rows.map((r) => r.name)).toContain(k.id);
      const audit = await db.query(`SELECT status FROM auditentry WHERE apikeyid = $1`, [k.id]);
      expect(audit.rows.filter((r) => r.status === "success")).toHaveLength(3);
      const used = await db.query(`SELECT requests FROM usagecounter WHERE keyid = $1 AND period = 'total'`, [k.id]);
      expect(Number(used.rows[0].requests)).toBe(3);
    } finally {
      await db.end();
    }

    // a fresh data dir: everything comes from PostgreSQL, the rate window included
    env = await startEnv({ home: await tempDir("svc-pg-") });
    const c2 = env.client(k.secret);
    await expectError(c2.chat.completions.create({ model: "gpt-x", messages: [{ role: "user", content: "hi" }] }), 429, "rate_limit_exceeded");
  }, 60_000);
});
