// Embeddings: request transform (input string | string[]) and response (float or base64 vectors;
// the openai SDK asks for base64 by default and decodes it).
import type { EmbeddingRequest, EmbeddingResult } from "../../engines/chat/types";
import { bad, reqString } from "./validate";

import { MAX_EMBEDDING_INPUTS } from "../../schemas/api/protocols";

export { MAX_EMBEDDING_INPUTS };

export interface EmbeddingsParsed {
  req: EmbeddingRequest;
  format: "float" | "base64";
}

export function embeddingInputs(v: unknown, param: string): string[] {
  const list = typeof v === "string" ? [v] : v;
  if (!Array.isArray(list) || list.length === 0) throw bad(`'${param}' must be a string or a non-empty array of strings`, param);
  if (list.length > MAX_EMBEDDING_INPUTS) throw bad(`'${param}' may hold at most ${MAX_EMBEDDING_INPUTS} items`, param);
  list.forEach((s, i) => {
    if (typeof s !== "string") throw bad(`'${param}[${i}]' must be a string (token arrays are not supported)`, `${param}[${i}]`);
  });
  return list as string[];
}

export function parseEmbeddingsRequest(b: Record<string, any>): EmbeddingsParsed {
  const model = reqString(b.model, "model");
  const input = embeddingInputs(b.input, "input");
  const format = b.encoding_format ?? "float";
  if (format !== "float" && format !== "base64") throw bad("'encoding_format' must be \"float\" or \"base64\"", "encoding_format");
  if (b.dimensions !== undefined && b.dimensions !== null) throw bad("'dimensions' is not supported: vectors have the model's embedding size", "dimensions");
  return { req: { model, input }, format };
}

const toBase64 = (v: number[]) => Buffer.from(new Float32Array(v).buffer).toString("base64");

export function embeddingsResponse(r: EmbeddingResult, model: string, format: "float" | "base64") {
  return {
    object: "list" as const,
    data: r.vectors.map((v, index) => ({ object: "embedding" as const, index, embedding: format === "base64" ? toBase64(v) : v })),
    model,
    usage: { prompt_tokens: r.promptTokens, total_tokens: r.promptTokens },
  };
}
