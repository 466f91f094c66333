// Bodies of Ollama's model management routes (/api/pull, /api/delete), served by api/routes/ollama-manage.ts.
import { Type } from "@sinclair/typebox";

const name = (description?: string) =>
  Type.Optional(Type.String({ minLength: 1, maxLength: 2048, ...(description ? { description } : {}), errorMessage: "{field} must be a non-empty string" }));

export const OllamaPullBody = Type.Object(
  {
    model: name("hf.co/<user>/<repo>:<quant>, hf:<user>/<repo>:<quant>, hf:<user>/<repo>/<file>.gguf, or an https:// URL (or `name`, its older spelling)"),
    name: name(),
    insecure: Type.Optional(Type.Boolean()),
    stream: Type.Optional(Type.Boolean({ description: "NDJSON progress objects (default true), else one answer at the end" })),
  },
  { additionalProperties: true, description: "Ollama /api/pull request: model (or name) is required" },
);

export const OllamaDeleteBody = Type.Object(
  { model: name("a pulled model's name (or `name`, its older spelling)"), name: name() },
  { additionalProperties: true, description: "Ollama /api/delete request: model (or name) is required" },
);
