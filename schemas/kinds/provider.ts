import { Type, type Static } from "@sinclair/typebox";
import { envelope, SecretRef } from "../common";

export const ProviderModel = Type.Object(
  {
    name: Type.String({ minLength: 1, description: "Model name clients request." }),
    upstreamName: Type.Optional(Type.String({ minLength: 1, description: "Name sent upstream, if different." })),
    inputPerMillion: Type.Optional(Type.Number({ minimum: 0, description: "USD per million prompt tokens." })),
    outputPerMillion: Type.Optional(Type.Number({ minimum: 0, description: "USD per million completion tokens." })),
    perImage: Type.Optional(Type.Number({ minimum: 0, description: "USD per image generated, edited or upscaled (media routes); charged to budgeted keys." })),
    perVideoSecond: Type.Optional(Type.Number({ minimum: 0, description: "USD per second of generated video." })),
    perAudioMinute: Type.Optional(Type.Number({ minimum: 0, description: "USD per minute of transcribed audio." })),
  },
  { additionalProperties: false },
);

export const ProviderSpec = Type.Object(
  {
    type: Type.Union([Type.Literal("openai"), Type.Literal("anthropic"), Type.Literal("ollama"), Type.Literal("local")]),
    baseUrl: Type.Optional(Type.String({ format: "uri", description: "Upstream base URL (…/v1 for openai)." })),
    credential: Type.Optional(SecretRef),
    headers: Type.Optional(Type.Record(Type.String(), SecretRef, { description: "Extra headers, values by reference." })),
    timeoutSeconds: Type.Integer({ minimum: 1, maximum: 3600, default: 120 }),
    models: Type.Array(ProviderModel, { default: [] }),
    capabilities: Type.Optional(
      Type.Array(
        Type.Union([
          Type.Literal("transcription"),
          Type.Literal("image_generation"),
          Type.Literal("image_edit"),
          Type.Literal("image_upscale"),
          Type.Literal("video"),
          Type.Literal("credits"),
        ]),
        {
          uniqueItems: true,
          description:
            "Media and account services this provider offers beyond chat: svc forwards /v1/audio/transcriptions, /v1/images/*, /v1/videos/* and /credits/balance only to providers that declare them (paths appended to baseUrl).",
        },
      ),
    ),
  },
  { additionalProperties: false },
);
export type ProviderSpec = Static<typeof ProviderSpec>;
export const Provider = envelope("Provider", ProviderSpec, "An upstream model provider the gateway routes to.");
