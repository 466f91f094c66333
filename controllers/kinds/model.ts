// The Model controller: a Model manifest names a local GGUF file. Reconcile resolves the file
// (relative -> the models dir), checks that it exists and is a GGUF, and registers it in the
// model pool (svc.engines.pool). Registering loads nothing: the pool loads on first use and
// unloads when idle, so Ready says "registered; loads on first use" until a request loads it.
// Deleting the object unregisters (unloads) the model; weights on disk are never deleted.
// A Model with spec.router instead of a file is a load-balanced name (engines/providers/model-routes.ts).
import { open, stat } from "node:fs/promises";
import { Value } from "@sinclair/typebox/value";
import type { KindController, ReadyCondition, ReconcileResult } from "../types";
import type { Svc } from "../../engines/svc";
import { ModelSpec } from "../../schemas/kinds/model";
import { ModelPool } from "../../engines/inference/pool";
import { resolveModelFile } from "../../engines/paths";
import { sourcedFile } from "./model-source";

/** The pool, if one was created. */
export function existingPool(svc: Svc): ModelPool | undefined {
  return svc.engines.pool;
}

/** The one model pool of this svc, created on first need (by this controller or the gateway). */
export function modelPool(svc: Svc): ModelPool {
  let pool = existingPool(svc);
  if (!pool) {
    pool = new ModelPool({ modelsDir: svc.modelsDir, log: (msg) => svc.log.info(msg), serverSampling: () => svc.server.generation });
    svc.engines.pool = pool;
  }
  return pool;
}

export const GGUF_MAGIC = Buffer.from("GGUF", "ascii");

export { resolveModelFile };

export type FileCheck = { ok: true; bytes: number } | { ok: false; reason: "FileNotFound" | "InvalidGguf"; message: string };

/** Exists, is a regular file, and starts with the GGUF magic bytes. */
export async function checkGguf(file: string): Promise<FileCheck> {
  const hint = "run `svc models create-tiny` to generate the default model, or point spec.file at a GGUF file";
  let size: number;
  try {
    const st = await stat(file);
    if (!st.isFile()) return { ok: false, reason: "FileNotFound", message: `${file} is not a file; ${hint}` };
    size = st.size;
  } catch {
    return { ok: false, reason: "FileNotFound", message: `model file not found: ${file}; ${hint}` };
  }
  const head = Buffer.alloc(4);
  let read = 0;
  try {
    const fh = await open(file, "r");
    try {
      read = (await fh.read(head, 0, 4, 0)).bytesRead;
    } finally {
      await fh.close();
    }
  } catch (e: any) {
    return { ok: false, reason: "FileNotFound", message: `cannot read model file ${file}: ${e?.code ?? e?.message ?? e}` };
  }
  if (read < 4 || !head.equals(GGUF_MAGIC)) {
    return { ok: false, reason: "InvalidGguf", message: `${file} is not a GGUF file (missing the GGUF magic bytes); ${hint}` };
  }
  return { ok: true, bytes: size };
}

/** How often to look again for a missing or invalid file (it may be written later). */
const RECHECK_MS = 15_000;

/** The router's problems for a routed Model, saying "does not exist" for a Provider that is not
 * in the store at all (the router only knows which Providers list which models). */
function routeProblems(svc: Svc, name: string, spec: NonNullable<ModelSpec["router"]>, store: { get(kind: string, name: string): unknown }): string[] {
  const missing = svc.engines.gateway?.router.modelRouteProblems(name) ?? [];
  const absent = new Set(spec.deployments.map((d) => d.provider).filter((p) => p !== "local" && !store.get("Provider", p)));
  return missing.map((m) => {
    const p = /^Provider (\S+) does not list model /.exec(m)?.[1];
    return p && absent.has(p) ? `Provider ${p} does not exist (apply a Provider named ${p}, or change this deployment's provider)` : m;
  });
}

export function modelController(svc: Svc): KindController<"Model"> {
  return {
    kind: "Model",
    // Model objects route through Providers: a Provider applied or changed re-checks them at once
    watches: ["Provider"],
    // none of these changes by itself: the file must be written, or a Provider applied
    terminal({ reason }) {
      if (reason === "FileNotFound") return "write the GGUF file (or `svc models create-tiny`), or point spec.file at one, then apply again";
      if (reason === "InvalidGguf") return "point spec.file at a GGUF file, then apply again";
      if (reason === "NoDeployment") return "apply the Provider each deployment names (listing the model), or change the deployments";
      return undefined;
    },
    // the gateway routes a Model's name and aliases to the local provider from the store write on
    project(name, obj) {
      const router = svc.engines.gateway?.router;
      if (!router) return;
      if (obj) router.putModel(name, obj.spec);
      else router.removeModel(name);
    },
    async reconcile(obj, ctx): Promise<ReadyCondition & ReconcileResult> {
      // a Model with a router names no file: the providers router serves it (model-routes.ts)
      if (obj.spec?.router) {
        existingPool(svc)?.unregister(obj.name);
        const n = obj.spec.router.deployments.length;
        const missing = routeProblems(svc, obj.name, obj.spec.router, ctx.store);
        if (missing.length === n) return { status: "False", reason: "NoDeployment", message: missing.join("; "), requeueAfterMs: RECHECK_MS };
        const message = `load-balanced over ${n - missing.length} of ${n} deployments${missing.length ? `; ${missing.join("; ")}` : ""}`;
        return { status: "True", reason: missing.length ? "DeploymentMissing" : "Routed", message, extra: { deployments: n - missing.length }, ...(missing.length ? { requeueAfterMs: RECHECK_MS } : {}) };
      }
      const spec = Value.Default(ModelSpec, structuredClone(obj.spec ?? {})) as ModelSpec;
      // a Model with source serves the file its download verified (model-source.ts)
      let sourced: { note?: string; sha256?: string } | undefined;
      if (spec.source) {
        const got = await sourcedFile(svc, obj.name, { ...spec, source: spec.source });
        if ("status" in got) return got;
        spec.file = got.file;
        sourced = got;
      }
      const file = resolveModelFile(svc, spec.file);
      const pool = modelPool(svc);
      const check = await checkGguf(file);
      if (!check.ok) {
        // a model whose file vanished is not served (and not listed) until it comes back
        pool.unregister(obj.name);
        return { status: "False", reason: check.reason, message: check.message, extra: { file, loaded: false }, requeueAfterMs: RECHECK_MS };
      }
      // idempotent for an unchanged spec; a changed spec (new generation) replaces the entry and
      // the next request loads the new settings
      pool.register(obj.name, { ...spec, file });
      const loaded = pool.list().find((m) => m.name === obj.name)?.loaded ?? false;
      const source = spec.source ? { source: spec.source, ...(sourced?.sha256 ? { sha256: sourced.sha256 } : {}) } : {};
      if (sourced?.note) return { status: "False", reason: "DownloadFailed", message: sourced.note, extra: { file, sizeBytes: check.bytes, loaded, ...source }, requeueAfterMs: RECHECK_MS };
      return {
        status: "True",
        reason: "Registered",
        message: `${spec.source ? "downloaded and verified; " : ""}${loaded ? "registered; loaded" : "registered; loads on first use"}`,
        extra: { file, sizeBytes: check.bytes, loaded, ...source },
      };
    },
    async finalize(obj) {
      existingPool(svc)?.unregister(obj.name);
    },
  };
}

export default modelController;
