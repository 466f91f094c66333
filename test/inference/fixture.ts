// Shared setup: a temp models dir holding the generated tiny model.
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import type { ChatEvent, ChatRequest } from "../../engines/chat/types";
import { ensureTinyModel } from "../../engines/inference";

export async function tinyModelsDir(): Promise<string> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "svc-inference-"));
  await ensureTinyModel(dir);
  return dir;
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
