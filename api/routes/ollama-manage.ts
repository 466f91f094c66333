// Ollama's model management over svc's downloads: POST /api/pull (NDJSON progress objects as
// Ollama sends them: "pulling manifest", "downloading" with total/completed, "verifying sha256
// digest", "writing manifest", "success") and DELETE /api/delete. Administration: loopback, or
// the administrative key from anywhere; every call is audited. A pulled model becomes a Model
// (owner api) with spec.source, named for the pull and aliased by the exact name pulled, so the
// Ollama client chats with it by that name.
import Router from "@koa/router";
import type { Context, Next } from "koa";
import { Readable } from "node:stream";
import type { Svc } from "../../engines/svc";
import { SvcError, invalidRequest } from "../../engines/errors";
import { downloadsOf, parseSource, removeModelFiles, type PullProgress } from "../../engines/inference/download";
import type { PullJob } from "../../engines/inference/download";
import { jsonBody } from "../body-schema";
import { OllamaDeleteBody, OllamaPullBody } from "../../schemas/api/models";
import { callerFrom, tokenFrom } from "../caller";
import { isLoopback } from "../loopback";
import { ndjsonLine } from "../sse";
import { renderOllama } from "../ollama/errors";
import { gatewayOf, managementActor } from "../management";
import { toSvcError } from "../errors";

const readPull = jsonBody("post", "/api/pull", OllamaPullBody);
const readDelete = jsonBody("delete", "/api/delete", OllamaDeleteBody);

/** A Model name for a pulled URI: hf.co/user/Repo-GGUF:Q4_K_M -> user-repo-gguf-q4_k_m. */
export function pulledModelName(uri: string): string {
  const s = uri
    .replace(/^hf:|^https?:\/\//, "")
    .toLowerCase()
    .replace(/[^a-z0-9._-]+/g, "-")
    .replace(/^[^a-z0-9]+|[^a-z0-9]+$/g, "");
  return s.slice(0, 200) || "pulled-model";
}

/** Ollama's progress object for a phase of the download. */
function ollamaProgress(p: PullProgress): Record<string, unknown> {
  if (p.phase === "downloading") return { status: "downloading", digest: p.source, total: p.total, completed: p.completed };
  if (p.phase === "writing manifest" || p.phase === "verifying sha256 digest") return { status: p.phase, ...(p.digest ? { digest: p.digest } : {}) };
  return { status: p.phase };
}

async function* progressLines(job: PullJob, done: Promise<unknown>): AsyncGenerator<string> {
  const queue: PullProgress[] = [];
  let wake: (() => void) | undefined;
  const off = job.on((p) => {
    queue.push(p);
    wake?.();
  });
  let finished = false;
  done.then(
    () => ((finished = true), wake?.()),
    () => ((finished = true), wake?.()),
  );
  try {
    let last = "";
    for (;;) {
      while (queue.length) {
        const p = queue.shift()!;
        if (p.phase === "success") continue; // said once the Model exists (below)
        const line = ndjsonLine(ollamaProgress(p));
        if (line !== last) yield (last = line);
      }
      if (finished) break;
      await new Promise<void>((r) => (wake = r));
      wake = undefined;
    }
  } finally {
    off();
  }
}

export default function ollamaManage(svc: Svc): Router {
  const r = new Router();

  /** Loopback, or the administrative key; the call is audited either way. */
  const admin = (action: string) => async (ctx: Context, next: Next) => {
    ctx.state.renderError = renderOllama;
    const gw = gatewayOf(svc);
    let actor;
    if (tokenFrom(ctx)) {
      actor = managementActor(gw, ctx);
      if (actor.role !== "admin") throw new SvcError("forbidden", "permission_denied", `${ctx.path} manages the server's models: loopback or the administrative key only`);
    } else if (isLoopback(ctx)) {
      // the machine's own operator: audited under the administrative identity, marked as loopback
      actor = gw.keys.getSpecial("admin");
    } else {
      throw new SvcError("unauthenticated", "invalid_api_key", `${ctx.path} manages the server's models: send the administrative key, or call from loopback`);
    }
    const metadata = { access: tokenFrom(ctx) ? "admin_key" : "loopback" };
    await gw.gate.call({ ...callerFrom(ctx), key: actor ?? null }, { action, scope: null, audit: action, metadata }, async () => next());
  };

  r.post("/api/pull", admin("models.pull"), async (ctx: Context) => {
    const b = await readPull(ctx);
    const asked = b.model ?? b.name;
    if (!asked) throw invalidRequest("'model' is required", "model");
    let uri: string;
    try {
      uri = parseSource(asked).uri;
    } catch {
      throw invalidRequest(`svc pulls GGUF models from Hugging Face or a URL: hf.co/<user>/<repo>:<quant>, hf:<user>/<repo>/<file>.gguf, or https://…; '${asked}' is neither`, "model");
    }
    const job = downloadsOf(svc).pull(uri, { refresh: true });
    // once the files are verified and in place, a Model serves them under the pulled name
    const done = job.done.then(async (res) => {
      const existing = svc.store.list({ kind: "Model" }).find((o) => o.spec?.source && parseSource(String(o.spec.source)).uri === uri);
      if (existing) return existing.name;
      const name = pulledModelName(uri);
      const aliases = [...new Set([asked, uri])].filter((a) => a !== name);
      await svc.store.write([{ op: "upsert", kind: "Model", name, owner: "api", spec: { source: uri, file: res.record.file, threads: 1, aliases } }]);
      // "success" means usable, as with Ollama: the Model registered (it loads on first use)
      const generation = svc.store.get("Model", name)?.generation ?? 1;
      const wait = await svc.control?.waitForReady([{ kind: "Model", name }], { [`Model/${name}`]: generation }, 30_000);
      if (wait && !wait.ready) throw new SvcError("unavailable", "model_unavailable", `model ${name} was downloaded but is not ready: ${wait.objects[0]?.message ?? "timed out"}`);
      return name;
    });
    if (b.stream === false) {
      await done;
      ctx.body = { status: "success" };
      return;
    }
    ctx.type = "application/x-ndjson";
    ctx.body = Readable.from(
      (async function* () {
        yield* progressLines(job, done);
        try {
          await done;
          yield ndjsonLine({ status: "success" });
        } catch (e) {
          yield ndjsonLine({ error: toSvcError(e).message });
        }
      })(),
    );
  });

  r.delete("/api/delete", admin("models.delete"), async (ctx: Context) => {
    const b = await readDelete(ctx);
    const asked = b.model ?? b.name;
    if (!asked) throw invalidRequest("'model' is required", "model");
    const plain = asked.replace(/:latest$/, "");
    const o = svc.store.list({ kind: "Model" }).find((m) => m.name === asked || m.name === plain || (m.spec?.aliases as string[] | undefined)?.includes(asked));
    if (!o) throw new SvcError("not_found", "model_not_found", `model '${asked}' not found`, "model");
    if (o.owner !== "api") throw new SvcError("conflict", "conflict", `model '${asked}' is declared by a manifest (${o.owner}): remove it there, or \`svc models rm\` its file`, "model");
    await svc.store.write([{ op: "delete", kind: "Model", name: o.name }]);
    const file = typeof o.spec?.file === "string" ? o.spec.file : undefined;
    // the weights go too (an explicit delete), unless another Model still serves that file
    const shared = file && svc.store.list({ kind: "Model" }).some((m) => m.name !== o.name && m.spec?.file === file);
    if (file && !shared) await removeModelFiles(svc.modelsDir, file);
    ctx.status = 200;
    ctx.body = null;
  });

  return r;
}
