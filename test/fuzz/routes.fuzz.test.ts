// Property-based fuzzing of every route in svc's route table (the Koa routers: admin, keys,
// audit, OpenAI and Ollama listings, MCP, agents and tasks, metrics, pairing, secure channel,
// media, memory; and the lean inference routes), and of the secure channel's inner requests:
// malformed bodies, headers, ids and query strings never get a 5xx, and every refusal is a JSON
// body with `error`. A modest number of cases in CI; `npm run fuzz` (FUZZ_RUNS=10000) for depth.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { readFileSync } from "node:fs";
import path from "node:path";
import fc from "fast-check";
import { startTestSvc, type TestSvc } from "../helpers/svc";
import { routers, inferenceRoutes } from "../../api/routes";
import { SecureSession, PairError, newDeviceKey } from "../../cli/pair-client";
import { body, encodeAll, headers, nastyString, nastyValue, query, segment, type Body } from "./arbitraries";
import { raw } from "./raw-request";

const RUNS = Number(process.env.FUZZ_RUNS || 300);
const SEED = process.env.FUZZ_SEED ? Number(process.env.FUZZ_SEED) : undefined;

interface Route {
  method: string;
  path: string;
}

/** svc's route table, read from the routers themselves (a route added later is fuzzed too). */
function routeTable(s: TestSvc): Route[] {
  const out: Route[] = [];
  const seen = new Set<string>();
  const add = (method: string, p: string) => {
    if (seen.has(method + " " + p)) return;
    seen.add(method + " " + p);
    out.push({ method, path: p });
  };
  for (const make of routers) {
    for (const layer of (make(s.svc) as any).stack as Array<{ path: string | RegExp; methods: string[] }>) {
      const p = typeof layer.path === "string" ? layer.path : "/api/fuzz"; // Ollama's catch-all
      // CONNECT is a tunnel request Node answers itself (svc has no tunnel); HEAD has no body
      for (const m of layer.methods) if (m !== "HEAD" && m !== "CONNECT") add(m, p);
    }
  }
  for (const make of inferenceRoutes) for (const r of make(s.svc)) add("POST", r.path);
  return out;
}

function fill(pattern: string, ids: string[]): string {
  let i = 0;
  return pattern.replace(/:[A-Za-z_]+/g, () => ids[i++ % ids.length] || "x");
}

const payload = (b: Body) => (b.kind === "none" ? undefined : b.kind === "text" ? b.text : Buffer.from(b.bytes));

/** 5xx answers that are not a client's mistake: the server offers no such service as configured
 * (a media operation no Provider declares) or an engine is not running. Each was checked. */
const notAClientMistake = (status: number, json: any) =>
  status === 503 && /^(model|service)_unavailable$/.test(json?.error?.code ?? "") && /no provider offers|engine .*not running|is not running/.test(json.error.message ?? "");

/** The distinct 503s taken as "not a client's mistake", for the report. */
const unavailable = new Set<string>();

function judge(what: string, status: number, text: string, found: string[]): void {
  let json: any;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  if (status >= 500 && notAClientMistake(status, json)) unavailable.add(`${what.split(" as ")[0]}: ${json.error.message}`);
  if (status >= 500 && !notAClientMistake(status, json)) found.push(`${status} ${what}: ${text.slice(0, 300)}`);
  if (status >= 400 && (json === undefined || json.error === undefined)) found.push(`${status} without a JSON error body ${what}: ${text.slice(0, 200)}`);
}

describe("fuzz: every route with malformed input", () => {
  let s: TestSvc;
  let adminKey: string;
  let table: Route[];
  beforeAll(async () => {
    s = await startTestSvc({ resyncMs: 0 });
    adminKey = readFileSync(path.join(s.home, "admin.key"), "utf8").trim();
    table = routeTable(s);
  }, 60_000);
  afterAll(async () => {
    await s?.stop();
  });

  it("covers the route families", () => {
    const paths = table.map((r) => r.path).join(" ");
    for (const family of ["/admin/", "/v1/chat/completions", "/v1/messages", "/api/chat", "/agents/", "/tasks/", "/memory/", "/pair", "/secure/", "/v1/images/", "/v1/videos/", "/mcp", "/v1/api-keys"]) {
      expect(paths, family).toContain(family);
    }
  });

  it("answers the 5xx found by hand with a 400 naming the field", async () => {
    const post = (p: string, text: string) => raw(s.port, "POST", p, { headers: { host: `127.0.0.1:${s.port}` }, body: text });
    // an invite whose payload is JSON null (read before its signature can be checked)
    const nullInvite = `svcinv1.${Buffer.from("null").toString("base64url")}.AAAA`;
    const inv = await post("/pair-invite", JSON.stringify({ invite: nullInvite, public_key: newDeviceKey().publicKey }));
    expect([inv.status, inv.json?.error?.param]).toEqual([400, "invite"]);
    // lone UTF-16 surrogates in JSON strings, refused by the one body parser with the field's pointer
    const cancel = await post("/v1/images/cancel", '{"id":"\\ud800"}');
    expect([cancel.status, cancel.json?.error?.param]).toEqual([400, "/id"]);
    expect(cancel.json.error.message).toMatch(/lone UTF-16 surrogate/);
    const before = s.svc.store.revision;
    const docs = await post("/admin/config/apply", '{"confirm":true,"documents":[{"apiVersion":"svc/v1","kind":"Agent","metadata":{"name":"a\\udc00"},"spec":{}}]}');
    expect([docs.status, docs.json?.error?.param]).toEqual([400, "/documents/0/metadata/name"]);
    // the same surrogate written as a YAML escape inside a document string
    const yaml = await post("/admin/config/apply", JSON.stringify({ confirm: true, document: 'apiVersion: svc/v1\nkind: Agent\nmetadata: {name: "a\\ud800"}\nspec: {}\n' }));
    expect(yaml.status).toBeGreaterThanOrEqual(400);
    expect(yaml.status).toBeLessThan(500);
    expect(yaml.json?.error).toBeDefined();
    expect(s.svc.store.revision).toBe(before);
    // secure-channel inner headers that HTTP cannot carry: CR/LF in a value, a name that is no token
    const ses = await SecureSession.open(s.url, s.svc.engines.pairing!.server().public_key);
    for (const headers of [{ "x-a": "a\r\nx-injected: 1" }, { "bad name": "x" }, { "x-b": "\u0000" }, { "": "x" }] as Array<Record<string, string>>) {
      const err = await ses.call({ method: "GET", path: "/v1/models", headers }).then(() => undefined, (e) => e);
      expect(err, JSON.stringify(headers)).toBeInstanceOf(PairError);
      expect([err.status, err.code], JSON.stringify(headers)).toEqual([400, "invalid_request"]);
    }
  });

  it(`answers no 5xx and a JSON error body on every route (${RUNS} cases)`, async () => {
    const found: string[] = [];
    const statuses = new Map<number, number>();
    await fc.assert(
      fc.asyncProperty(fc.nat(), fc.array(segment, { minLength: 1, maxLength: 3 }), query, headers(adminKey), body, async (pick, ids, q, h, b) => {
        const route = table[pick % table.length];
        const p = fill(route.path, ids) + q;
        const what = `${route.method} ${route.path} as ${p} ${JSON.stringify(h).slice(0, 200)} body=${JSON.stringify(payload(b) ?? null).slice(0, 300)}`;
        try {
          const r = await raw(s.port, route.method, p, { headers: { host: `127.0.0.1:${s.port}`, ...h }, body: payload(b) });
          judge(what, r.status, r.text, found);
          statuses.set(r.status, (statuses.get(r.status) ?? 0) + 1);
        } catch (e: any) {
          found.push(`no answer (${e?.code ?? e?.message}) ${what}`);
        }
      }),
      { numRuns: RUNS, seed: SEED, endOnFailure: true },
    );
    if (process.env.FUZZ_REPORT) console.log(`fuzz: ${RUNS} route cases, ${found.length} findings (${found.filter((f) => /^5\d\d /.test(f)).length} 5xx); statuses ${JSON.stringify(Object.fromEntries([...statuses].sort((a, b) => a[0] - b[0])))}\n${found.join("\n")}\n503 taken as unavailable, not a client mistake:\n${[...unavailable].sort().join("\n")}`);
    expect(found).toEqual([]);
  }, 600_000);

  it(`answers no 5xx for malformed secure-channel inner requests (${Math.ceil(RUNS / 10)} cases)`, async () => {
    const server = s.svc.engines.pairing!.server();
    const ses = await SecureSession.open(s.url, server.public_key);
    const found: string[] = [];
    const innerHeaders = fc.dictionary(fc.oneof(nastyString, fc.constantFrom("content-type", "authorization", "x y", "a:b", "é")), fc.oneof(nastyString, fc.constantFrom("a\r\nb", "x\ny", "\u0000", "é", "\ud800")), { maxKeys: 3 });
    const innerPath = fc.oneof(
      fc.array(segment, { maxLength: 4 }).map((a) => "/" + a.join("/")),
      fc.constantFrom("/v1/chat/completions", "/V1/models/", "/v1/../admin/config/export", "/ADMIN/config/status", "/secure/call", "/%zz", "/v1/models/%ED%A0%80", "/é", "//x", "x", ""),
      nastyString,
    );
    await fc.assert(
      fc.asyncProperty(fc.constantFrom("GET", "POST", "DELETE", "PATCH", "PUT", "HEAD", "get", "TRACE", "x"), innerPath, fc.option(innerHeaders), fc.option(nastyValue), async (method, p, hd, bd) => {
        const inner: any = { method, path: p };
        if (hd !== null) inner.headers = hd;
        if (bd !== null) inner.body = bd;
        try {
          const a = await ses.send(ses.envelope(inner));
          if (method.toUpperCase() === "HEAD") {
            if (a.status >= 500) found.push(`inner HEAD ${JSON.stringify(p)}: ${a.status}`);
          } else judge(`inner ${method} ${encodeAll(String(p)).slice(0, 200)} ${JSON.stringify(hd)}`, a.status, a.body.toString("utf8"), found);
        } catch (e) {
          if (!(e instanceof PairError)) throw e;
          if ((e.status ?? 0) >= 500) found.push(`outer ${e.status} for inner ${method} ${JSON.stringify(p)} ${JSON.stringify(hd)}: ${e.message}`);
        }
      }),
      { numRuns: Math.ceil(RUNS / 10), seed: SEED, endOnFailure: true },
    );
    expect(found).toEqual([]);
  }, 600_000);
});
