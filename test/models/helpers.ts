// Shared by the model download tests: generated GGUFs served by the hub stand-in, applying a
// Model over the admin route, and reading its status.
import { readFile } from "node:fs/promises";
import path from "node:path";
import { writeTinyGguf, type TinyModelSize } from "../../engines/inference/gguf";
import { tempDir } from "../helpers/svc";

/** svc's generated GGUF of a size, as bytes (written once per size and process). */
const generated = new Map<TinyModelSize, Promise<Buffer>>();
export function generatedGguf(size: TinyModelSize = "tiny"): Promise<Buffer> {
  let p = generated.get(size);
  if (!p) {
    p = (async () => {
      const file = path.join(await tempDir("svc-gguf-"), `svc-${size}.gguf`);
      await writeTinyGguf(file, size);
      return readFile(file);
    })();
    generated.set(size, p);
  }
  return p;
}

export const modelDoc = (name: string, spec: Record<string, unknown>) =>
  JSON.stringify({ apiVersion: "svc/v1", kind: "Model", metadata: { name }, spec: { threads: 1, contextSize: 512, parallel: 1, idleUnloadSeconds: 0, ...spec } });

export async function apply(url: string, document: string): Promise<void> {
  const r = await fetch(`${url}/admin/config/apply`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ document, source: "models-test" }) });
  if (!r.ok) throw new Error(`apply: ${r.status} ${await r.text()}`);
}

export interface ModelStatus {
  ready?: { status: string; reason: string; message: string };
  download?: { phase: string; completedBytes: number; totalBytes: number; bytesPerSecond: number; percent: number };
  [k: string]: unknown;
}

export async function modelStatus(url: string, name: string): Promise<ModelStatus> {
  const r = await fetch(`${url}/admin/config/status`);
  const body = (await r.json()) as { objects: Array<{ kind: string; name: string; ready?: any; download?: any }> };
  const o = body.objects.find((x) => x.kind === "Model" && x.name === name);
  return { ready: o?.ready ?? undefined, download: o?.download };
}

export async function waitUntil<T>(what: string, probe: () => Promise<T | undefined | false>, timeoutMs = 30_000): Promise<T> {
  const end = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const v = await probe();
      if (v) return v;
      last = v;
    } catch (e) {
      last = e;
    }
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}; last: ${JSON.stringify(last)}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}
