// Memory (spec/local-server.md "Memory"): ingest, flush, search, recall preview, status,
// consolidation, runs, dead letters, and the three index operations. Shapes live here; the
// engine is engines/memory. Every route passes the whole gate (action memory:<operation>, metered,
// audited): a valid key with the `memory` scope, or unauthenticated loopback.
//   POST   /memory/ingest                         {agent_id, conversation_id, turns, session_date?, skip_extraction?, project?, flush?}
//   POST   /memory/flush                          {agent_id, conversation_id?} -> distill pending sessions now
//   GET    /memory/search?agent_id&kind&q&limit   kind: facts | episodes | transcript | all
//   GET    /memory/recall?agent_id&q&model        what an agent run would get (budgeted system message)
//   GET    /memory/status?agent_id                counts, index state, settings
//   POST   /memory/consolidate                    {agent_id?} -> consolidation runs
//   GET    /memory/runs?agent_id&type             distillation | consolidation | index
//   GET    /memory/dead-letters?agent_id          POST /memory/dead-letters/{id}/retry
//   DELETE /memory/agents/{id}/index              remove the agent's index (records stay)
//   POST   /memory/agents/{id}/index/rebuild      rebuild the index from the agent's records
//   DELETE /memory/agents/{id}?confirm=true       purge the agent's namespace (records and index)
import Router from "@koa/router";
import type { Context } from "koa";
import type { Svc } from "../../engines/svc";
import type { MemoryEngine } from "../../engines/memory/engine";
import { KINDS, type Hit, type MemoryKind } from "../../engines/memory/types";
import type { RunRecord } from "../../engines/memory/types";
import { SvcError, invalidRequest } from "../../engines/errors";
import { jsonBody } from "../body-schema";
import { AgentOnlyBody, MemoryFlushBody, MemoryIngestBody } from "../../schemas/api/bodies";
import { callerFrom, setHeaders } from "../caller";
import { rateHeaders } from "../errors";
import { utcDateOrIso, utcMs } from "../../engines/iso-time";

const MAX_TURN = 200_000;
const readIngest = jsonBody("post", "/memory/ingest", MemoryIngestBody);
const readFlush = jsonBody("post", "/memory/flush", MemoryFlushBody);
const readConsolidate = jsonBody("post", "/memory/consolidate", AgentOnlyBody);
const KIND_OF: Record<string, readonly MemoryKind[]> = { facts: ["fact"], episodes: ["episode"], transcript: ["transcript"], all: KINDS };

function memoryOf(svc: Svc): MemoryEngine {
  const m = svc.engines.memory;
  if (!m) throw new SvcError("unavailable", "model_unavailable", "memory is unavailable: the memory engine is not running");
  return m;
}

/** The gate for a memory route, as for /mcp/call: key use with the `memory` scope (403 naming
 * it), the key's policy for action memory:<operation> (the path's first segment: ingest, search,
 * agents, ...), then its limits (rate limits and max_requests count the call; memory has no
 * price, so a budgeted key may use it). The verdict's x-ratelimit-* state is on the response. */
async function call(svc: Svc, ctx: Context, work: () => Promise<void>): Promise<void> {
  const gw = svc.engines.gateway;
  if (!gw) throw new SvcError("unavailable", "model_unavailable", "memory is unavailable: the gateway engine is not running");
  const op = (ctx.path.split("/")[2] ?? "").toLowerCase().replace(/[^a-z]+/g, "_");
  const audit = `memory.${op}`;
  const caller = callerFrom(ctx);
  const key = gw.gate.admit(caller, "memory", audit);
  if (key) ctx.state.keyId = key.id;
  await gw.gate.call(caller, { action: `memory:${op}`, scope: "memory", audit, metered: true, spendMicros: 0 }, (v) => {
    setHeaders(ctx, rateHeaders(v.rate));
    return work();
  });
}

/** A memory route: the engine (503 when it is not running), then the handler as one call through
 * the gate, settled and audited (success or its error code) whatever the handler does. */
function memoryRoute(svc: Svc, handler: (ctx: Context, m: MemoryEngine) => Promise<void>) {
  return async (ctx: Context) => {
    const m = memoryOf(svc);
    await call(svc, ctx, () => handler(ctx, m));
  };
}

const str = (v: unknown, field: string, max: number, required = false): string | undefined => {
  if (v === undefined || v === null) {
    if (required) throw invalidRequest(`${field} (a non-empty string) is required`, field);
    return undefined;
  }
  if (typeof v !== "string" || (required && !v.trim())) throw invalidRequest(`${field} must be a${required ? " non-empty" : ""} string`, field);
  if (v.length > max) throw invalidRequest(`${field} is longer than ${max} characters`, field);
  return v;
};

/** The agent must exist (404 otherwise); its memory being off is an outcome, not an error. */
function agentParam(svc: Svc, v: unknown, field = "agent_id"): string {
  const a = str(v, field, 200, true)!;
  const o = svc.store.get("Agent", a);
  if (!o || o.deleting) throw new SvcError("not_found", "not_found", `agent ${JSON.stringify(a)} does not exist (GET /agents lists them)`);
  return a;
}

function hitView(h: Hit) {
  return {
    kind: h.kind,
    id: h.id,
    text: h.text,
    score: Math.round(h.score * 10000) / 10000,
    lexical: Math.round(h.lexical * 10000) / 10000,
    vector: h.vector === null ? null : Math.round(h.vector * 10000) / 10000,
    salience: h.salience,
    ...(h.status ? { status: h.status } : {}),
    ...(h.conversationId ? { conversation_id: h.conversationId } : {}),
    created_at: new Date(h.createdAt).toISOString(),
  };
}

const runView = (r: RunRecord) => ({ id: r.id, object: "memory.run", agent_id: r.agent, type: r.type, trigger: r.trigger, started_at: new Date(r.startedAt).toISOString(), finished_at: r.finishedAt === null ? null : new Date(r.finishedAt).toISOString(), result: r.result });

export default function routes(svc: Svc): Router {
  const r = new Router();

  r.post("/memory/ingest", memoryRoute(svc, async (ctx, m) => {
    const b = await readIngest(ctx);
    const agent = agentParam(svc, b.agent_id);
    const conversationId = b.conversation_id;
    // the schema checks each turn's shape; their joint length and the date's meaning are code
    const turns = b.turns.map((t, i) => {
      if (t.user.length + t.assistant.length > MAX_TURN) throw invalidRequest(`turns[${i}] is longer than ${MAX_TURN} characters`, `turns[${i}]`);
      return { user: t.user, assistant: t.assistant };
    });
    const given = b.session_date ?? undefined;
    const sessionDate = given === undefined ? undefined : utcDateOrIso(given); // stored in UTC with Z
    if (sessionDate !== undefined && !Number.isFinite(utcMs(sessionDate))) throw invalidRequest("session_date must be a date (ISO 8601, e.g. 2025-03-14 or 2025-03-14T09:30:00Z)", "session_date");
    const res = await m.ingest({ agent, conversationId, turns, sessionDate, skipExtraction: b.skip_extraction ?? undefined, project: b.project ?? undefined, flush: b.flush ?? undefined });
    ctx.body = { object: "memory.ingest", agent_id: agent, conversation_id: conversationId, ...res };
  }));

  r.post("/memory/flush", memoryRoute(svc, async (ctx, m) => {
    const b = await readFlush(ctx);
    const agent = agentParam(svc, b.agent_id);
    const conv = b.conversation_id ?? undefined;
    ctx.body = { object: "memory.flush", agent_id: agent, sessions: await m.flushAgent(agent, conv) };
  }));

  r.get("/memory/search", memoryRoute(svc, async (ctx, m) => {
    const agent = agentParam(svc, ctx.query.agent_id);
    const kind = typeof ctx.query.kind === "string" ? ctx.query.kind : "all";
    const kinds = KIND_OF[kind];
    if (!kinds) throw invalidRequest("kind must be facts, episodes, transcript or all", "kind");
    const q = typeof ctx.query.q === "string" ? ctx.query.q.slice(0, 2000) : "";
    const limit = ctx.query.limit === undefined ? 10 : Number(ctx.query.limit);
    if (!Number.isInteger(limit) || limit < 1 || limit > 100) throw invalidRequest("limit must be an integer from 1 to 100", "limit");
    const vec = await m.queryVector(q);
    const hits = await m.searcher.search(agent, kinds, q, limit, vec);
    ctx.body = { object: "list", agent_id: agent, kind, query: q, recall: vec ? "hybrid" : "lexical", data: hits.map(hitView) };
  }));

  r.get("/memory/recall", memoryRoute(svc, async (ctx, m) => {
    const agent = agentParam(svc, ctx.query.agent_id);
    const q = str(ctx.query.q, "q", 20_000, true)!;
    const model = str(ctx.query.model, "model", 500) ?? m.agentSpec(agent)?.defaultModel;
    if (!model) throw invalidRequest("model is required (the agent has no defaultModel)", "model");
    const res = await m.recall(agent, q, model);
    ctx.body = { object: "memory.recall", agent_id: agent, model, budget_tokens: res.budget, tokens: res.tokens, counted_with: res.countedWith, text: res.text, items: res.items, skipped: res.skipped };
  }));

  r.get("/memory/status", memoryRoute(svc, async (ctx, m) => {
    const agent = agentParam(svc, ctx.query.agent_id);
    const s = m.settings();
    ctx.body = {
      object: "memory.status",
      agent_id: agent,
      remembered: m.refusal(agent) === null,
      reason: m.refusal(agent),
      recall: s.embeddingModel ? "hybrid" : "lexical",
      counts: await m.store.counts(agent),
      index: await m.index.stats(agent),
      identity: (await m.store.identity(agent)).map((i) => ({ key: i.key, value: i.value })),
      entities: (await m.store.entities(agent, 20)).map((e) => ({ name: e.name, type: e.type, mentions: e.mentions })),
      settings: s,
    };
  }));

  r.post("/memory/consolidate", memoryRoute(svc, async (ctx, m) => {
    const b = await readConsolidate(ctx);
    const agent = b.agent_id === undefined ? undefined : agentParam(svc, b.agent_id);
    ctx.body = { object: "list", data: (await m.consolidate(agent, "on_demand")).map(runView) };
  }));

  r.get("/memory/runs", memoryRoute(svc, async (ctx, m) => {
    const agent = ctx.query.agent_id === undefined ? undefined : agentParam(svc, ctx.query.agent_id);
    const type = typeof ctx.query.type === "string" ? ctx.query.type : undefined;
    if (type && !["distillation", "consolidation", "index"].includes(type)) throw invalidRequest("type must be distillation, consolidation or index", "type");
    ctx.body = { object: "list", data: (await m.store.runs(agent, type, 100)).map(runView) };
  }));

  r.get("/memory/dead-letters", memoryRoute(svc, async (ctx, m) => {
    const agent = ctx.query.agent_id === undefined ? undefined : agentParam(svc, ctx.query.agent_id);
    ctx.body = {
      object: "list",
      data: (await m.store.deadLetters(agent)).map((d) => ({ id: d.id, object: "memory.dead_letter", agent_id: d.agent, conversation_id: d.conversationId, reason: d.reason, attempts: d.attempts, signals: d.signalIds.length, created_at: new Date(d.createdAt).toISOString(), resolved_at: d.resolvedAt === null ? null : new Date(d.resolvedAt).toISOString() })),
    };
  }));

  r.post("/memory/dead-letters/:id/retry", memoryRoute(svc, async (ctx, m) => {
    const d = await m.store.deadLetter(ctx.params.id);
    if (!d) throw new SvcError("not_found", "not_found", `dead letter ${JSON.stringify(ctx.params.id)} does not exist`);
    if (d.resolvedAt !== null) throw new SvcError("conflict", "conflict", `dead letter ${d.id} was already retried`);
    const res = (await m.retryDeadLetter(d.id))!;
    ctx.body = { object: "memory.retry", dead_letter: d.id, outcome: res.outcome, ...(res.dead_letter ? { new_dead_letter: res.dead_letter } : {}) };
  }));

  r.delete("/memory/agents/:id/index", memoryRoute(svc, async (ctx, m) => {
    const agent = agentParam(svc, ctx.params.id, "id");
    ctx.body = runView(await m.removeIndex(agent));
  }));

  r.post("/memory/agents/:id/index/rebuild", memoryRoute(svc, async (ctx, m) => {
    const agent = agentParam(svc, ctx.params.id, "id");
    ctx.body = runView(await m.rebuild(agent));
  }));

  r.delete("/memory/agents/:id", memoryRoute(svc, async (ctx, m) => {
    // purge works for agents that no longer exist too (their records outlive the Agent object)
    const agent = str(ctx.params.id, "id", 200, true)!;
    if (ctx.query.confirm !== "true") throw new SvcError("conflict", "conflict", `purging deletes every memory record of agent ${agent}; repeat with ?confirm=true`);
    ctx.body = runView(await m.purge(agent));
  }));

  return r;
}
