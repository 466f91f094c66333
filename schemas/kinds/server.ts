import { Type, type Static } from "@sinclair/typebox";
import { envelope, Sampling } from "../common";
import { ExchangeRates } from "./currency";
import { ServerTracing } from "./server-tracing";

export const ServerSpec = Type.Object(
  {
    host: Type.String({ default: "127.0.0.1", description: "Listen address." }),
    port: Type.Integer({ minimum: 0, maximum: 65535, default: 1337 }),
    exposure: Type.Union([Type.Literal("loopback"), Type.Literal("network")], {
      default: "loopback",
      description: "loopback binds 127.0.0.1 only; network allows the host address above.",
    }),
    modelsDir: Type.Optional(Type.String({ minLength: 1 })),
    allowUnauthenticatedLoopback: Type.Boolean({
      default: true,
      description: "Inference from loopback without a key. A key that is sent is checked when it is an svc key (sk-svc-...) or the admin/master key; other values (SDK placeholders such as \"none\") are served anonymously.",
    }),
    exchangeRates: Type.Optional(ExchangeRates),
    allowedHosts: Type.Optional(
      Type.Array(Type.String({ minLength: 1, maxLength: 253, pattern: "^(\\*\\.)?[A-Za-z0-9]([A-Za-z0-9.-]*[A-Za-z0-9])?$|^\\[[0-9A-Fa-f:.]+\\]$" }), {
      description:
        "Host names (besides localhost, 127.0.0.1 and [::1]) that loopback callers may use without a key, e.g. a local reverse proxy's name; *.example.com matches its subdomains. A loopback request with another Host and no valid key is refused (403): DNS-rebinding protection. Keyed requests work from any Host.",
      }),
    ),
    cors: Type.Optional(
      Type.Object(
        {
          allowedOrigins: Type.Array(Type.String({ pattern: "^https?://[^/?#*\\s]+$" }), {
            default: [],
            description: "Browser origins (scheme://host[:port], no wildcard) that get CORS headers. Any other cross-origin request is refused (403); admin routes never get CORS.",
          }),
        },
        { additionalProperties: false },
      ),
    ),
    limits: Type.Object(
      {
        maxBodyBytes: Type.Integer({ minimum: 1024, maximum: 268435456, default: 4194304 }),
        requestTimeoutSeconds: Type.Integer({ minimum: 1, maximum: 86400, default: 600, description: "How long a client may take to send a whole request (Node's server.requestTimeout); responses may stream longer." }),
        maxConcurrentDispatch: Type.Integer({
          minimum: 1,
          maximum: 1024,
          default: 4,
          description: "Detached agent tasks at once: queued, running and awaiting input all count. A dispatch over the limit gets 429 capacity_exceeded and starts nothing.",
        }),
        taskRetentionHours: Type.Optional(
          Type.Integer({ minimum: 1, maximum: 87600, description: "How long finished tasks (completed, failed, cancelled) and their step logs are kept before they are pruned. Default 168 (7 days)." }),
        ),
      },
      { additionalProperties: false, default: {} },
    ),
    retentionDays: Type.Optional(
      Type.Integer({
        minimum: 1,
        maximum: 36500,
        description: "How long audit entries are kept (default 90). Older ones are pruned in small batches; their per-key/model/day usage roll-ups are kept.",
      }),
    ),
    retentionArchiveDir: Type.Optional(
      Type.String({
        minLength: 1,
        description: "When set, audit entries are appended to audit-<UTC day>.jsonl files in this directory (relative to svc's home unless absolute) before retention deletes them.",
      }),
    ),
    metrics: Type.Object(
      {
        public: Type.Boolean({
          default: false,
          description: "Serve GET /metrics to any caller. Off: loopback callers and the administrative key only (metric labels name the models, providers and routes in use).",
        }),
      },
      { additionalProperties: false, default: {} },
    ),
    tracing: Type.Optional(ServerTracing),
    // -- generation settings (the spec's "user settings" layer) --
    generation: Type.Optional(
      Type.Object(Sampling.properties, {
        additionalProperties: false,
        description:
          "Server-wide generation defaults for local models, between the Model manifest's sampling and svc's built-in values: a request's own value wins, then the Model's, then these, then the built-in. GET /admin/generation-settings shows the source of each effective value.",
      }),
    ),
  },
  { additionalProperties: false },
);
export type ServerSpec = Static<typeof ServerSpec>;
export const Server = envelope("Server", ServerSpec, "The server singleton: listen address, exposure, models dir, limits.");
