// Embeddings: request transform (input string | string[]) and response (float or base64 vectors;
// the openai SDK asks for base64 by default and decodes it).
import type { EmbeddingRequest, EmbeddingResult } from "../../engines/chat/types";
import { bad } from "./validate";

export interface EmbeddingsParsed {
  req: EmbeddingRequest;
  format: "float" | "base64";
}

/** input as a list: the body schemas hold it to a string or 1..MAX_EMBEDDING_INPUTS strings. */
export const embeddingInputs = (v: string | string[]): string[] => (typeof v === "string" ? [v] : v);

export function parseEmbeddingsRequest(b: Record<string, any>): EmbeddingsParsed {
  const model: string = b.model;
  const input = embeddingInputs(b.input);
  const format: "float" | "base64" = b.encoding_format ?? "float";
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
