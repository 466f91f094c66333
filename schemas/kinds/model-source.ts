// Where a Model's weights come from (spec.source) and how they are fetched (spec.download):
// the Model controller downloads them into the models dir (engines/inference/download).
import { Type } from "@sinclair/typebox";
import { SecretRef } from "../common";

export const ModelSource = Type.String({
  minLength: 4,
  // node-llama-cpp's model URIs: hf:<user>/<repo>:<quant>, hf:<user>/<repo>/<file>#<branch>, or a URL
  pattern: "^(hf:[^/\\s]+/[^\\s]+|https?://\\S+)$",
  description:
    "Download the weights from here into the models dir before serving: hf:<user>/<repo>:<quant> (e.g. hf:Qwen/Qwen2.5-0.5B-Instruct-GGUF:Q4_K_M), hf:<user>/<repo>/<file>.gguf#<branch>, or an https:// URL. Ready once the file is complete and verified (size, and the hub's SHA-256 where it gives one). Split GGUFs download every part.",
});

export const ModelDownload = Type.Object(
  {
    endpoint: Type.Optional(
      Type.String({ pattern: "^https?://\\S+$", description: "The Hugging Face hub endpoint hf: URIs resolve against (a mirror). Default: SVC_HF_ENDPOINT, HF_ENDPOINT, else https://huggingface.co/." }),
    ),
    token: Type.Optional(Type.Unsafe<string>({ ...SecretRef, description: "Access token for gated or private repositories, by reference (env:HF_TOKEN or file:/path)." })),
    sha256: Type.Optional(Type.String({ pattern: "^[A-Fa-f0-9]{64}$", description: "Expected SHA-256 of the file (checked in addition to the hub's own digest)." })),
  },
  { additionalProperties: false, description: "How spec.source is downloaded." },
);
