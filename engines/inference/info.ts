// Model metadata for /api/show and listings, read from the GGUF header without loading weights.
import { stat } from "node:fs/promises";
import { GgufFileType, readGgufFileInfo } from "node-llama-cpp";
import type { ModelSpec } from "../../schemas/kinds/model";

export interface ModelInfo {
  name: string;
  file: string;
  sizeBytes: number;
  architecture: string;
  /** exact: summed over the tensors */
  parameterCount: number;
  contextLength?: number;
  embeddingLength?: number;
  /** GGUF file type, e.g. "F32", "F16", "Q4_K_M" */
  quantization: string;
  chatTemplate?: string;
  capabilities: ("completion" | "tools" | "embedding")[];
  /** the whole metadata section, minus the vocabulary arrays */
  metadata: Record<string, unknown>;
}

// keyed by path and checked against the file's identity, not its mtime alone: a file replaced by
// one carrying the same mtime (cp -p, rsync -t, an unpacked archive) showed the old file's facts
const cache = new Map<string, { stamp: string; info: Omit<ModelInfo, "name" | "capabilities"> }>();

export async function readModelInfo(name: string, file: string, spec: ModelSpec): Promise<ModelInfo> {
  const st = await stat(file);
  const stamp = `${st.dev}:${st.ino}:${st.size}:${st.mtimeMs}`;
  let hit = cache.get(file);
  if (!hit || hit.stamp !== stamp) {
    const gguf = await readGgufFileInfo(file, { readTensorInfo: true, ignoreKeys: ["tokenizer.ggml.tokens", "tokenizer.ggml.scores", "tokenizer.ggml.token_type", "tokenizer.ggml.merges"] });
    const meta = gguf.metadata as unknown as { general: Record<string, unknown>; tokenizer?: { chat_template?: string } };
    const arch = String(meta.general.architecture ?? "unknown");
    const archMeta = gguf.architectureMetadata as { context_length?: number; embedding_length?: number };
    const fileType = meta.general.file_type as number | undefined;
    const quantization = fileType === undefined ? "unknown" : String(GgufFileType[fileType] ?? fileType).replace(/^(ALL|MOSTLY)_/, "");
    const parameterCount = (gguf.fullTensorInfo ?? gguf.tensorInfo ?? [])
      .reduce((n, t) => n + t.dimensions.reduce((a: number, d) => a * Number(d), 1), 0);
    hit = {
      stamp,
      info: {
        file,
        sizeBytes: st.size,
        architecture: arch,
        parameterCount,
        contextLength: archMeta.context_length,
        embeddingLength: archMeta.embedding_length,
        quantization,
        chatTemplate: meta.tokenizer?.chat_template,
        metadata: JSON.parse(JSON.stringify(gguf.metadata, (_k, v) => (typeof v === "bigint" ? Number(v) : v))),
      },
    };
    cache.set(file, hit);
  }
  const capabilities: ModelInfo["capabilities"] = ["completion", "tools"];
  if (spec.embeddings !== false) capabilities.push("embedding");
  return { name, ...hit.info, capabilities };
}
