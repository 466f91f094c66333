// Shared setup: a temp models dir holding the generated tiny model.
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { getLlama, type Llama } from "node-llama-cpp";
import { afterAll, beforeAll } from "vitest";
import type { ChatEvent, ChatRequest } from "../../engines/chat/types";
import { ensureTinyModel, ModelPool } from "../../engines/inference";

export async function tinyModelsDir(): Promise<string> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "svc-inference-"));
  await ensureTinyModel(dir);
  return dir;
}

/** For one test file: a models dir with the tiny model and a CPU llama, made before its tests and
 * disposed after them; pool() is a new ModelPool over them (each test closes its own). */
export function useTinyLlama(): { dir(): string; llama(): Llama; pool(): ModelPool } {
  let dir = "";
  let llama: Llama | undefined;
  beforeAll(async () => {
    dir = await tinyModelsDir();
    llama = await getLlama({ gpu: false });
  }, 30_000);
  afterAll(async () => {
    await llama?.dispose();
  });
  return { dir: () => dir, llama: () => llama!, pool: () => new ModelPool({ modelsDir: dir, llama: llama! }) };
}

export const tinySpec = (over: Record<string, unknown> = {}) => ({
  file: "svc-tiny.gguf",
  contextSize: 1024,
  threads: 1,
  parallel: 2,
  idleUnloadSeconds: 0,
  embeddings: true,
  ...over,
});

export function chatReq(over: Partial<ChatRequest> = {}): ChatRequest {
  return { model: "tiny", stream: true, messages: [{ role: "user", content: "hello there" }], maxTokens: 16, sampling: { temperature: 0 }, ...over };
}

export async function events(it: AsyncIterable<ChatEvent>): Promise<ChatEvent[]> {
  const out: ChatEvent[] = [];
  for await (const ev of it) out.push(ev);
  return out;
}
