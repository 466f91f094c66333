import { Type, type Static } from "@sinclair/typebox";
import { envelope, Sampling } from "../common";

export const ModelSpec = Type.Object(
  {
    file: Type.String({ minLength: 1, description: "GGUF path; relative paths resolve in the models dir." }),
    contextSize: Type.Integer({ minimum: 128, maximum: 1048576, default: 2048 }),
    threads: Type.Integer({ minimum: 1, maximum: 256, default: 1, description: "CPU threads; set explicitly (the default oversubscribes small machines)." }),
    parallel: Type.Integer({ minimum: 1, maximum: 64, default: 4, description: "Sequences of one context: requests served at once." }),
    idleUnloadSeconds: Type.Integer({ minimum: 0, default: 300, description: "Unload after this long with no lease; 0 never unloads." }),
    sampling: Type.Optional(Sampling),
    embeddings: Type.Boolean({ default: true, description: "Serve /v1/embeddings and /api/embed with this model." }),
    aliases: Type.Optional(Type.Array(Type.String({ minLength: 1 }), { uniqueItems: true })),
  },
  { additionalProperties: false },
);
export type ModelSpec = Static<typeof ModelSpec>;
export const Model = envelope("Model", ModelSpec, "A local GGUF model served by node-llama-cpp.");
