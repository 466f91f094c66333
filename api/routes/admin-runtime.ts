// Loopback-only runtime views: /admin/cache-stats (the model pool's counters),
// /admin/generation-settings (effective sampling per model with the source of each value:
// request, model, server (Server.spec.generation) or builtin) and
// /admin/runtime-settings (the server's effective settings and versions).
import Router from "@koa/router";
import type { Context } from "koa";
import os from "node:os";
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import type { Svc } from "../../engines/svc";
import { loopbackOnly } from "../loopback";
import { DEFAULT_BODY_LIMIT } from "../body";
import { resolveModelFile } from "../../engines/paths";
import { BUILTIN_SAMPLING_DEFAULTS, SAMPLING_KEYS as KEYS, SAMPLING_PRECEDENCE, samplingSources, type SamplingKey as Key } from "../../engines/inference/sampling";
import type { ModelSpec } from "../../schemas/kinds/model";
import { invalidRequest, notFound } from "../../engines/errors";


/** Query parameter names of hypothetical request overrides (OpenAI / llama.cpp spelling). */
const QUERY: Record<Key, string> = {
  temperature: "temperature",
  topP: "top_p",
  topK: "top_k",
  minP: "min_p",
  repeatPenalty: "repeat_penalty",
  seed: "seed",
  maxTokens: "max_tokens",
  stop: "stop",
};

function overridesFrom(ctx: Context): Partial<Record<Key, unknown>> {
  const out: Partial<Record<Key, unknown>> = {};
  for (const k of KEYS) {
    const raw = ctx.query[QUERY[k]];
    if (raw === undefined) continue;
    if (k === "stop") {
      out.stop = Array.isArray(raw) ? raw : [raw];
      continue;
    }
    const n = Number(Array.isArray(raw) ? raw[0] : raw);
    if (!Number.isFinite(n)) throw invalidRequest(`query parameter '${QUERY[k]}' must be a number`, QUERY[k]);
    out[k] = n;
  }
  return out;
}


let llamaVersion: string | null | undefined;
function nodeLlamaCppVersion(): string | null {
  if (llamaVersion !== undefined) return llamaVersion;
  try {
    const req = createRequire(import.meta.url);
    let dir = path.dirname(req.resolve("node-llama-cpp"));
    for (let i = 0; i < 6; i++) {
      try {
        const pkg = JSON.parse(readFileSync(path.join(dir, "package.json"), "utf8"));
        if (pkg.name === "node-llama-cpp") return (llamaVersion = String(pkg.version));
      } catch {
        /* keep walking up */
      }
      dir = path.dirname(dir);
    }
  } catch {
    /* not installed */
  }
  return (llamaVersion = null);
}

function svcVersion(): string | null {
  try {
    return JSON.parse(readFileSync(new URL("../../package.json", import.meta.url), "utf8")).version ?? null;
  } catch {
    return null;
  }
}

export default function adminRuntime(svc: Svc): Router {
  const r = new Router();

  r.get("/admin/cache-stats", loopbackOnly, (ctx: Context) => {
    const pool = svc.engines.pool;
    if (!pool) {
      ctx.body = { models: [], totals: { loaded: 0, activeLeases: 0, queued: 0, generations: 0, promptTokensReused: 0, promptTokensEvaluated: 0 }, registered: [] };
      return;
    }
    const stats = pool.stats();
    ctx.body = {
      ...stats,
      registered: pool.list().map((m) => ({
        name: m.name,
        file: m.file,
        sizeBytes: m.sizeBytes ?? null,
        loaded: m.loaded,
        idleUnloadSeconds: m.spec.idleUnloadSeconds ?? null,
      })),
    };
  });

  r.get("/admin/generation-settings", loopbackOnly, (ctx: Context) => {
    const overrides = overridesFrom(ctx);
    const only = typeof ctx.query.model === "string" ? ctx.query.model : undefined;
    const pool = svc.engines.pool;
    const registered = new Map((pool?.list() ?? []).map((m) => [m.name, m]));
    // local models only: a Model with a router is served by providers (engines/providers/model-routes.ts)
    const objects = svc.store.list({ kind: "Model" }).filter((o) => !o.spec?.router && (!only || o.name === only || pool?.resolveName(only) === o.name));
    if (only && objects.length === 0) throw notFound(`model '${only}' not found`);
    ctx.body = {
      precedence: SAMPLING_PRECEDENCE,
      /** Server.spec.generation (the user-settings layer) */
      serverSettings: svc.server.generation ?? {},
      builtinDefaults: BUILTIN_SAMPLING_DEFAULTS,
      ...(Object.keys(overrides).length ? { requestOverrides: overrides } : {}),
      models: objects.map((o) => {
        const spec = (registered.get(o.name)?.spec ?? o.spec) as Partial<ModelSpec>;
        return {
          name: o.name,
          registered: registered.has(o.name),
          contextSize: spec.contextSize ?? null,
          threads: spec.threads ?? null,
          parallel: spec.parallel ?? null,
          sampling: samplingSources(overrides, spec.sampling, svc.server.generation),
        };
      }),
    };
  });

  r.get("/admin/runtime-settings", loopbackOnly, (ctx: Context) => {
    const s = svc.server;
    const pool = svc.engines.pool;
    const models = svc.store.list({ kind: "Model" }).filter((o) => !o.spec?.router).map((o) => ({
      name: o.name,
      file: typeof o.spec?.file === "string" ? resolveModelFile(svc, o.spec.file) : null,
      threads: o.spec?.threads ?? 1,
      contextSize: o.spec?.contextSize ?? 2048,
      parallel: o.spec?.parallel ?? 4,
      idleUnloadSeconds: o.spec?.idleUnloadSeconds ?? 300,
      loaded: pool?.list().find((m) => m.name === o.name)?.loaded ?? false,
    }));
    ctx.body = {
      host: s.host,
      port: s.port,
      listening: { address: ctx.req.socket.localAddress ?? null, port: ctx.req.socket.localPort ?? null },
      exposure: s.exposure,
      allowUnauthenticatedLoopback: s.allowUnauthenticatedLoopback,
      home: svc.home,
      modelsDir: svc.modelsDir,
      limits: { maxBodyBytes: s.limits?.maxBodyBytes ?? DEFAULT_BODY_LIMIT, requestTimeoutSeconds: s.limits?.requestTimeoutSeconds ?? null, maxConcurrentDispatch: s.limits?.maxConcurrentDispatch ?? null },
      threads: { cpus: os.availableParallelism?.() ?? os.cpus().length, models },
      versions: { svc: svcVersion(), node: process.versions.node, nodeLlamaCpp: nodeLlamaCppVersion() },
      platform: { os: process.platform, arch: process.arch },
    };
  });

  return r;
}
