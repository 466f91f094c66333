// Loopback-only configuration administration: export, schema, plan, apply (and status for the
// CLI). Plan/apply bodies: {"document": "<yaml>"} | {"documents": [...]} | {"plan": {...}}, plus
// source, prune, allowPruneAll, confirm, wait; or a raw application/yaml body with the options
// in the query string.
import Router from "@koa/router";
import type { Context } from "koa";
import type { Svc } from "../../engines/svc";
import { loopbackOnly } from "../loopback";
import { objectSummary } from "../../manifests/object-summary";
import { readRaw } from "../body";
import { jsonBody } from "../body-schema";
import { ConfigBody } from "../../schemas/api/bodies";
import { SvcError } from "../../engines/errors";
import {
  loadText,
  assertValid,
  makePlan,
  applyPlan,
  readPlanFile,
  exportObjects,
  schemaText,
  ManifestError,
  ConfirmationRequiredError,
  PruneAllRefusedError,
  StaleRevisionError,
  type Plan,
  type ApplyResult,
} from "../../manifests";
import type { WaitResult } from "../../engines/svc";
import type { Ref } from "../../prisma/resource-store";
import { EXIT_NEW_REFUSALS, replayParams, replayPlan, type ReplayParams } from "./admin-replay";

const YAML_TYPES = ["application/yaml", "application/x-yaml", "text/yaml", "text/x-yaml"];
const DEFAULT_SOURCE = "default";
const DEFAULT_WAIT_SECONDS = 60;
const readPlan = jsonBody("post", "/admin/config/plan", ConfigBody);
const readApply = jsonBody("post", "/admin/config/apply", ConfigBody);

interface ConfigRequest {
  text?: string;
  file: string;
  plan?: unknown;
  source: string;
  prune: boolean;
  allowPruneAll: boolean;
  confirm: boolean;
  wait: boolean;
  waitTimeoutMs: number;
  /** plan only: replay the audit entries of a window through the proposed state */
  replay?: ReplayParams;
}

/** What the engines know now and the last written condition may not: is a Model loaded. */
function liveState(svc: Svc, o: { kind: string; name: string }): { loaded?: boolean } {
  if (o.kind !== "Model" || !svc.engines.pool) return {};
  const m = svc.engines.pool.list().find((x) => x.name === o.name);
  return m ? { loaded: m.loaded } : {};
}

export default function adminConfig(svc: Svc): Router {
  const r = new Router();

  r.get("/admin/config/export", loopbackOnly, (ctx) => {
    const format = formatParam(ctx);
    const includeApiOwned = boolParam(ctx.query.includeApiOwned, "includeApiOwned") ?? false;
    const showDefaults = boolParam(ctx.query.showDefaults, "showDefaults") ?? false;
    ctx.type = format === "json" ? "application/json" : "application/yaml";
    ctx.body = exportObjects(svc.store, { format, includeApiOwned, showDefaults });
  });

  r.get("/admin/config/schema", loopbackOnly, (ctx) => {
    const format = formatParam(ctx);
    ctx.type = format === "json" ? "application/json" : "application/yaml";
    ctx.body = schemaText(format);
  });

  // Not in the spec's table: what `svc status` and `svc doctor` read from a running server.
  r.get("/admin/config/status", loopbackOnly, (ctx) => {
    const owners = svc.control?.owners ?? {};
    ctx.body = {
      url: svc.control?.listenUrl() ?? null,
      pid: process.pid,
      home: svc.home,
      modelsDir: svc.modelsDir,
      revision: svc.store.revision,
      loading: svc.readiness?.loading() ?? [],
      server: svc.server,
      objects: svc.store.list({ includeDeleting: true }).map((o) => ({ ...objectSummary(o), controller: owners[o.kind] ?? "accepted", ...liveState(svc, o) })),
    };
  });

  r.post("/admin/config/plan", loopbackOnly, async (ctx) => {
    const req = await readConfigRequest(ctx);
    await guarded(ctx, async () => {
      await svc.store.reload(); // pick up an offline write by another process
      const plan = req.plan !== undefined ? readPlanFile(JSON.stringify(req.plan)) : planFrom(svc, req);
      const replay = req.replay && (await replayPlan(svc, plan, req.replay));
      const exitCode = replay && replay.totals.newRefusals > 0 ? EXIT_NEW_REFUSALS : changeCount(plan) > 0 ? 2 : 0;
      ctx.body = replay ? { plan, replay, exitCode } : { plan, exitCode };
    });
  });

  r.post("/admin/config/apply", loopbackOnly, async (ctx) => {
    const req = await readConfigRequest(ctx);
    await guarded(ctx, async () => {
      await svc.store.reload();
      let result: ApplyResult;
      if (req.plan !== undefined) {
        // a saved plan applies as it is, or not at all (stale -> 409)
        result = await applyPlan(svc.store, readPlanFile(JSON.stringify(req.plan)), { confirm: req.confirm });
      } else {
        result = await applyFresh(svc, req);
      }
      const body: Record<string, unknown> = { revision: result.revision, applied: result.applied, plan: result.plan };
      if (req.wait) body.wait = await waitFor(svc, result.plan, req.waitTimeoutMs);
      ctx.body = body;
    });
  });

  return r;
}

/** A plan made from a document in this request: if another write lands between plan and apply,
 * plan again (the caller never saw this plan, so it is not a stale *saved* plan). */
async function applyFresh(svc: Svc, req: ConfigRequest): Promise<ApplyResult> {
  for (let attempt = 0; ; attempt++) {
    const plan = planFrom(svc, req);
    if (changeCount(plan) === 0) return { revision: svc.store.revision, applied: 0, plan };
    try {
      return await applyPlan(svc.store, plan, { confirm: req.confirm });
    } catch (e) {
      if (e instanceof StaleRevisionError && attempt < 3) continue;
      throw e;
    }
  }
}

function planFrom(svc: Svc, req: ConfigRequest): Plan {
  const loaded = loadText(req.text ?? "", req.file);
  const objects = assertValid(loaded);
  return makePlan(svc.store, objects, {
    source: req.source,
    prune: req.prune,
    allowPruneAll: req.allowPruneAll,
    warnings: loaded.issues.filter((i) => i.severity === "warning"),
  });
}

function changeCount(plan: Plan): number {
  return plan.summary.create + plan.summary.update + plan.summary.delete;
}

async function waitFor(svc: Svc, plan: Plan, timeoutMs: number): Promise<WaitResult> {
  const manager = svc.control;
  const refs: Ref[] = [];
  const gens = new Map<string, number>();
  for (const c of plan.changes) {
    if (c.action === "unchanged") continue;
    refs.push({ kind: c.kind, name: c.name });
    const o = c.action === "delete" ? undefined : svc.store.get(c.kind, c.name);
    if (o) gens.set(`${c.kind}/${c.name}`, o.generation);
  }
  if (!manager) return { ready: false, timedOut: false, objects: [] };
  return manager.waitForReady(refs, gens, timeoutMs);
}

/** Map manifest errors to 422/409 with their details; anything else goes to the error middleware. */
async function guarded(ctx: Context, f: () => Promise<void>): Promise<void> {
  try {
    await f();
  } catch (e: any) {
    if (e instanceof ManifestError) {
      const first = e.issues.find((i) => i.severity === "error") ?? e.issues[0];
      return reply(ctx, 422, "invalid_manifest", e.message, first?.path ?? null, { issues: e.issues });
    }
    if (e instanceof ConfirmationRequiredError) return reply(ctx, 409, "confirmation_required", e.message, "confirm", { reasons: e.reasons });
    if (e instanceof StaleRevisionError) {
      return reply(ctx, 409, "stale_plan", e.message, "plan", { planRevision: e.expected, storeRevision: e.actual });
    }
    if (e instanceof PruneAllRefusedError) return reply(ctx, 409, "prune_all_refused", e.message, "allowPruneAll");
    throw e;
  }
}

function reply(ctx: Context, status: number, code: string, message: string, param: string | null, extra: Record<string, unknown> = {}) {
  ctx.status = status;
  ctx.body = { error: { message, type: status === 409 ? "conflict_error" : "invalid_request_error", code, param, ...extra } };
}

async function readConfigRequest(ctx: Context): Promise<ConfigRequest> {
  if (ctx.is(YAML_TYPES)) {
    const raw = await readRaw(ctx, (ctx.state as any).bodyLimit);
    return { text: raw.toString("utf8"), file: "<request>", ...applyOptions(ctx.query) };
  }
  // the same schema for both routes: the path is only the registry's key
  const b = await (ctx.path.endsWith("/apply") ? readApply : readPlan)(ctx);
  const given = (["document", "documents", "plan"] as const).filter((k) => b[k] !== undefined);
  if (given.length !== 1) {
    throw new SvcError("invalid", "invalid_request", 'send exactly one of "document" (YAML text), "documents" (a list of objects) or "plan" (a saved plan)', given.length ? given[1] : "document");
  }
  let text: string | undefined;
  let file = "<request>";
  if (b.document !== undefined) {
    text = b.document;
  } else if (b.documents !== undefined) {
    // JSON is YAML: one pretty-printed array gives issues a line and column in <documents>
    text = JSON.stringify(b.documents, null, 2);
    file = "<documents>";
  }
  return { text, file, plan: b.plan, ...applyOptions(b) };
}

/** The apply options, from the query string (YAML bodies) or the JSON body (already checked by
 * its schema) alike. */
function applyOptions(src: Record<string, unknown>) {
  return {
    source: sourceParam(src.source),
    prune: boolParam(src.prune, "prune") ?? false,
    allowPruneAll: boolParam(src.allowPruneAll, "allowPruneAll") ?? false,
    confirm: boolParam(src.confirm, "confirm") ?? false,
    wait: boolParam(src.wait, "wait") ?? false,
    waitTimeoutMs: waitParam(src.waitTimeoutSeconds),
    replay: replayParams(src),
  };
}

function formatParam(ctx: Context): "yaml" | "json" {
  const f = ctx.query.format ?? "yaml";
  if (f !== "yaml" && f !== "json") throw new SvcError("invalid", "invalid_request", 'format must be "yaml" or "json"', "format");
  return f;
}

function boolParam(v: unknown, name: string): boolean | undefined {
  if (v === undefined) return undefined;
  if (typeof v === "boolean") return v;
  if (v === "true" || v === "1" || v === "") return true;
  if (v === "false" || v === "0") return false;
  throw new SvcError("invalid", "invalid_request", `${name} must be true or false`, name);
}

function sourceParam(v: unknown): string {
  if (v === undefined || v === null) return DEFAULT_SOURCE;
  if (typeof v !== "string" || v.length === 0 || v.length > 512 || /[\u0000-\u001f]/.test(v)) {
    throw new SvcError("invalid", "invalid_request", "source must be a non-empty string of at most 512 printable characters", "source");
  }
  return v;
}

function waitParam(v: unknown): number {
  if (v === undefined) return DEFAULT_WAIT_SECONDS * 1000;
  const n = Number(v);
  if (!Number.isFinite(n) || n <= 0 || n > 3600) throw new SvcError("invalid", "invalid_request", "waitTimeoutSeconds must be between 0 and 3600", "waitTimeoutSeconds");
  return n * 1000;
}
