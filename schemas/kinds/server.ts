import { Type, type Static } from "@sinclair/typebox";
import { envelope } from "../common";

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
    metrics: Type.Object(
      {
        public: Type.Boolean({
          default: false,
          description: "Serve GET /metrics to any caller. Off: loopback callers and the administrative key only (metric labels name the models, providers and routes in use).",
        }),
      },
      { additionalProperties: false, default: {} },
    ),
  },
  { additionalProperties: false },
);
export type ServerSpec = Static<typeof ServerSpec>;
export const Server = envelope("Server", ServerSpec, "The server singleton: listen address, exposure, models dir, limits.");
