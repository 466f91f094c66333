import { Type, type Static } from "@sinclair/typebox";
import { envelope, SecretRef } from "../common";
import { Currency } from "./currency";

const MediaCapability = Type.Union([
  Type.Literal("transcription"),
  Type.Literal("image_generation"),
  Type.Literal("image_edit"),
  Type.Literal("image_upscale"),
  Type.Literal("video"),
  Type.Literal("credits"),
]);

// --- the response cache (engines/cache; docs/cache.md) ---
export const ProviderModelCache = Type.Object(
  {
    enabled: Type.Optional(Type.Boolean({ description: "Default true when the block is present." })),
    ttlSeconds: Type.Optional(Type.Integer({ minimum: 1, maximum: 31_536_000, description: "How long an answer is kept (default 3600)." })),
    scope: Type.Optional(
      Type.Union([Type.Literal("key"), Type.Literal("team"), Type.Literal("organization"), Type.Literal("global")], {
        description: "Who a stored answer may answer (default key): the key that stored it, its team, its organization, or every caller allowed the model. A key without a team (organization) keeps to its own.",
      }),
    ),
    maxEntries: Type.Optional(Type.Integer({ minimum: 1, maximum: 10_000_000, description: "Answers of this model kept; the least recently used are evicted (default 10000)." })),
    chargeHits: Type.Optional(Type.Boolean({ description: "Charge a cached answer its price against budgets (default false: hits are free)." })),
  },
  { additionalProperties: false, description: "Exact-match caching of this model's answers (chat, completions, Responses, Messages, Ollama, embeddings); see docs/cache.md." },
);
export type ProviderModelCache = Static<typeof ProviderModelCache>;

export const ProviderModel = Type.Object(
  {
    name: Type.String({ minLength: 1, description: "Model name clients request." }),
    upstreamName: Type.Optional(Type.String({ minLength: 1, description: "Name sent upstream, if different." })),
    inputPerMillion: Type.Optional(Type.Number({ minimum: 0, description: "Price per million prompt tokens, in the Provider's currency (default USD)." })),
    outputPerMillion: Type.Optional(Type.Number({ minimum: 0, description: "Price per million completion tokens, in the Provider's currency (default USD)." })),
    // --- vendor types and routing (providers engine): a deployment's share of its model's traffic
    weight: Type.Optional(Type.Number({ minimum: 0, description: "Share of this model's traffic under the weighted strategy (default 1; 0: only when the others fail). Several Providers serving one model name are its deployments." })),
    perImage: Type.Optional(Type.Number({ minimum: 0, description: "USD per image generated, edited or upscaled (media routes); charged to budgeted keys." })),
    perVideoSecond: Type.Optional(Type.Number({ minimum: 0, description: "USD per second of generated video." })),
    perAudioMinute: Type.Optional(Type.Number({ minimum: 0, description: "USD per minute of transcribed audio." })),
    capabilities: Type.Optional(
      Type.Array(MediaCapability, {
        uniqueItems: true,
        description: "The media capabilities this model serves (of the Provider's). Without it: those its prices name (perImage: images, perAudioMinute: transcription, perVideoSecond: video), else all of the Provider's.",
      }),
    ),
    cache: Type.Optional(ProviderModelCache),
  },
  { additionalProperties: false },
);

// --- vendor types and routing (providers engine; docs/providers.md) ---
export const ProviderRouting = Type.Object(
  {
    strategy: Type.Optional(
      Type.Union([Type.Literal("weighted"), Type.Literal("least-busy"), Type.Literal("latency"), Type.Literal("cost-optimized")], {
        description: "How a deployment is chosen among the Providers serving a model (default weighted). The first Provider by name that sets it decides for the model.",
      }),
    ),
    maxAttempts: Type.Optional(Type.Integer({ minimum: 1, maximum: 10, description: "Tries of one request across deployments, the first included (default 3)." })),
    backoffMs: Type.Optional(Type.Integer({ minimum: 0, maximum: 60000, description: "Wait before a retry, doubled each time (default 100)." })),
    maxWaitMs: Type.Optional(Type.Integer({ minimum: 0, maximum: 600000, description: "Longest wait for a cooled-down deployment's Retry-After when no other is available (default 10000)." })),
    cooldown: Type.Optional(
      Type.Object(
        {
          failures: Type.Optional(Type.Integer({ minimum: 1, description: "Failures (5xx, timeouts, refused connections) within windowSeconds that cool this Provider down (default 3). A 429 cools it at once." })),
          windowSeconds: Type.Optional(Type.Integer({ minimum: 1, description: "Default 60." })),
          seconds: Type.Optional(Type.Integer({ minimum: 1, description: "How long a cooled Provider is skipped after failures (default 30). A 429 cools it for its Retry-After when the upstream sends one (shorter or longer than this; 0 does not cool it), else for this." })),
        },
        { additionalProperties: false },
      ),
    ),
  },
  { additionalProperties: false, description: "Load balancing, retries and cooldown for the models this Provider serves (see docs/providers.md)." },
);
export type ProviderRouting = Static<typeof ProviderRouting>;

const VendorTypes = [Type.Literal("azure-openai"), Type.Literal("bedrock"), Type.Literal("gemini"), Type.Literal("vertex")];

const VendorFields = {
  apiVersion: Type.Optional(Type.String({ minLength: 1, description: "azure-openai: the api-version query parameter (default 2024-10-21)." })),
  deployments: Type.Optional(Type.Record(Type.String(), Type.String({ minLength: 1 }), { description: "azure-openai: model name -> Azure deployment name (default: upstreamName, else name)." })),
  auth: Type.Optional(
    Type.Union([Type.Literal("api-key"), Type.Literal("entra-id")], { description: "azure-openai: send the credential as the api-key header (default) or as an Entra ID bearer token." }),
  ),
  region: Type.Optional(Type.String({ pattern: "^[a-z0-9-]+$", description: "bedrock: AWS region (signing and the default endpoint); vertex: the location." })),
  project: Type.Optional(Type.String({ minLength: 1, description: "vertex: Google Cloud project id." })),
  tokenUrl: Type.Optional(Type.String({ format: "uri", description: "vertex: OAuth token endpoint (default the key file's token_uri, else https://oauth2.googleapis.com/token)." })),
  routing: Type.Optional(ProviderRouting),
};
// --- end vendor types and routing ---

export const ProviderSpec = Type.Object(
  {
    type: Type.Union([Type.Literal("openai"), Type.Literal("anthropic"), Type.Literal("ollama"), Type.Literal("local"), ...VendorTypes]),
    baseUrl: Type.Optional(Type.String({ format: "uri", description: "Upstream base URL (…/v1 for openai). No credentials in it (user:password@ or a query parameter such as key=, token=): use credential or headers." })),
    credential: Type.Optional(SecretRef),
    headers: Type.Optional(Type.Record(Type.String(), SecretRef, { description: "Extra headers, values by reference." })),
    timeoutSeconds: Type.Integer({ minimum: 1, maximum: 3600, default: 120 }),
    models: Type.Array(ProviderModel, { default: [] }),
    ...VendorFields,
    capabilities: Type.Optional(
      Type.Array(
        MediaCapability,
        {
          uniqueItems: true,
          description:
            "Media and account services this provider offers beyond chat: svc forwards /v1/audio/transcriptions, /v1/images/*, /v1/videos/* and /credits/balance only to providers that declare them (paths appended to baseUrl).",
        },
      ),
    ),
    currency: Type.Optional(Type.Unsafe<string>({ ...Currency, description: "ISO 4217 code the model prices are in (default USD); spend is converted into each key's budget currency with Server.spec.exchangeRates." })),
  },
  { additionalProperties: false },
);
export type ProviderSpec = Static<typeof ProviderSpec>;
export const Provider = envelope("Provider", ProviderSpec, "An upstream model provider the gateway routes to.");
