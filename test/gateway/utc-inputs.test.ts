// Every timestamp svc takes is read as UTC when it names no offset, whatever zone the server runs
// in, and any offset is honoured: the usage report's from/to, the audit log's since/until, a
// memory ingest's session_date (stored with "Z"), an ApiKey manifest's revoked_at (shown with "Z").
// The server runs in Asia/Tokyo here, so a local-time reading would be 9 hours off.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startEnv, standIn, provider, type Env, type StandIn } from "./fixtures";
import { startMemEnv, type MemEnv } from "../memory/env";

const zone = process.env.TZ;
process.env.TZ = "Asia/Tokyo";
afterAll(() => {
  if (zone === undefined) delete process.env.TZ;
  else process.env.TZ = zone;
});

/** "YYYY-MM-DDTHH:MM:SS" of a UTC instant, with no offset */
const bare = (ms: number) => new Date(ms).toISOString().slice(0, 19);
/** the same instant written with a +09:00 offset */
const tokyo = (ms: number) => new Date(ms + 9 * 3600_000).toISOString().slice(0, 19) + "+09:00";
const HOUR = 3600_000;

describe("gateway query times", () => {
  let env: Env;
  let up: StandIn;
  let keyId: string;
  let secret: string;
  beforeAll(async () => {
    env = await startEnv();
    up = await standIn();
    await env.apply([provider("p", up, [{ name: "gpt-x", inputPerMillion: 1, outputPerMillion: 1 }])]);
    const k = await env.key({ name: "times" });
    keyId = k.id;
    secret = k.secret;
    await env.client(secret).chat.completions.create({ model: "gpt-x", messages: [{ role: "user", content: "hi" }] });
  });
  afterAll(async () => {
    await up?.close();
    await env?.stop();
  });

  it("GET /v1/usage from/to: no offset is UTC, an offset is honoured", async () => {
    const now = Date.now();
    const rows = async (qs: string) => (await env.api("GET", `/v1/usage?group_by=key&key_id=${keyId}&${qs}`)).json.data as any[];
    expect(await rows(`from=${bare(now - HOUR)}&to=${bare(now + HOUR)}`)).toHaveLength(1);
    // an hour from now (UTC) excludes the request; read as Tokyo time it would be 8 hours ago
    expect(await rows(`from=${bare(now + HOUR)}`)).toEqual([]);
    expect(await rows(`to=${bare(now - HOUR)}`)).toEqual([]);
    expect(await rows(`from=${encodeURIComponent(tokyo(now - HOUR))}&to=${encodeURIComponent(tokyo(now + HOUR))}`)).toHaveLength(1);
    expect(await rows(`from=${encodeURIComponent(tokyo(now + HOUR))}`)).toEqual([]);
  });

  it("GET /v1/audit-logs since/until: no offset is UTC, an offset is honoured", async () => {
    const now = Date.now();
    const entries = async (qs: string) =>
      ((await env.api("GET", `/v1/audit-logs?action=chat.completions&${qs}`, undefined, env.adminKey)).json.data as any[]).filter((e) => e.api_key_id === keyId || e.key_id === keyId);
    expect(await entries(`since=${bare(now - HOUR)}`)).toHaveLength(1);
    expect(await entries(`since=${bare(now + HOUR)}`)).toEqual([]);
    expect(await entries(`until=${bare(now - HOUR)}`)).toEqual([]);
    expect(await entries(`since=${encodeURIComponent(tokyo(now - HOUR))}`)).toHaveLength(1);
  });

  it("an ApiKey manifest's revoked_at is shown in UTC with Z", async () => {
    await env.apply([{ kind: "ApiKey", name: "gone", spec: { name: "gone", secretHash: `sha256:${"d".repeat(64)}`, revoked_at: "2026-01-01T09:00:00+09:00" } }]);
    const got = await env.api("GET", "/v1/api-keys/gone");
    expect(got.json.revoked_at).toBe("2026-01-01T00:00:00Z");
  });
});

describe("memory session_date", () => {
  let env: MemEnv;
  beforeAll(async () => {
    env = await startMemEnv(["ana"]);
    await env.agent("ana");
  });
  afterAll(async () => {
    await env?.stop();
  });

  it("is stored in UTC with Z (what extraction sees); a bare date stays a date", async () => {
    const seen = () => JSON.stringify(env.extractions().map((r: any) => r.body ?? r));
    let r = await env.ingest({ agent_id: "ana", conversation_id: "tz-1", turns: [{ user: "remember that I sail on Sundays", assistant: "Noted." }], session_date: "2024-06-01T19:00:00+09:00", flush: true });
    expect(r.status).toBe(200);
    expect(seen()).toContain("[2024-06-01T10:00:00Z]");
    r = await env.ingest({ agent_id: "ana", conversation_id: "tz-2", turns: [{ user: "remember that I row on Mondays", assistant: "Noted." }], session_date: "2024-06-02T08:30:00", flush: true });
    expect(seen()).toContain("[2024-06-02T08:30:00Z]");
    r = await env.ingest({ agent_id: "ana", conversation_id: "tz-3", turns: [{ user: "remember that I swim on Tuesdays", assistant: "Noted." }], session_date: "2024-06-03", flush: true });
    expect(seen()).toContain("[2024-06-03]");
  });
});
