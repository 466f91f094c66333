import { Type, type Static } from "@sinclair/typebox";
import { envelope, Sampling } from "../common";
import { ModelSource, ModelDownload } from "./model-source";
import { ProviderRouting } from "./provider";

// --- a router declared on the Model (providers engine; docs/providers.md "The router") ---
const routing = ProviderRouting.properties;

export const ModelRouteDeployment = Type.Object(
  {
    provider: Type.String({ minLength: 1, description: "A Provider's name, or local (a local Model)." }),
    model: Type.Optional(
      Type.String({ minLength: 1, description: "The model as that Provider lists it (its spec.models[].name: price, upstreamName and deployment map apply), or the local Model's name. Default: this Model's name." }),
    ),
    weight: Type.Optional(Type.Number({ minimum: 0, description: "Share of traffic under the weighted strategy (default 1; 0: only when the others fail)." })),
  },
  { additionalProperties: false },
);

export const ModelRouter = Type.Object(
  {
    deployments: Type.Array(ModelRouteDeployment, { minItems: 1, description: "The deployments serving this model name, across Providers." }),
    strategy: Type.Optional(Type.Union(routing.strategy.anyOf, { description: "How a deployment is chosen (default weighted)." })),
    maxAttempts: routing.maxAttempts,
    backoffMs: routing.backoffMs,
    maxWaitMs: routing.maxWaitMs,
    cooldown: Type.Optional(
      Type.Object(
        {
          failures: Type.Optional(Type.Integer({ minimum: 1, description: "Failures (5xx, timeouts, refused connections) within windowSeconds that cool a deployment down (default 3). A 429 cools it at once." })),
          windowSeconds: Type.Optional(Type.Integer({ minimum: 1, description: "Default 60." })),
          seconds: Type.Optional(Type.Integer({ minimum: 1, description: "How long a cooled deployment is skipped after failures (default 30). A 429 cools it for its Retry-After when the upstream sends one (shorter or longer than this; 0 does not cool it), else for this." })),
        },
        { additionalProperties: false },
      ),
    ),
  },
  {
    additionalProperties: false,
    description:
      "Serve this model name by load-balancing several deployments (Provider models) instead of a local file: weights, strategy, retries and cooldown in one place. With router, leave out file. Declarations here win over Provider-level weights/routing for the same name.",
  },
);
export type ModelRouter = Static<typeof ModelRouter>;
// --- end router ---

export const ModelSpec = Type.Object(
  {
    file: Type.Optional(Type.String({ minLength: 1, description: "GGUF path; relative paths resolve in the models dir. Required unless router or source is set; with source, the name the download is saved as." })),
    source: Type.Optional(ModelSource),
    download: Type.Optional(ModelDownload),
    contextSize: Type.Integer({ minimum: 128, maximum: 1048576, default: 2048 }),
    threads: Type.Integer({ minimum: 1, maximum: 256, default: 1, description: "CPU threads; set explicitly (the default oversubscribes small machines)." }),
    parallel: Type.Integer({ minimum: 1, maximum: 64, default: 4, description: "Sequences of one context: requests served at once." }),
    idleUnloadSeconds: Type.Integer({ minimum: 0, default: 300, description: "Unload after this long with no lease; 0 never unloads." }),
    sampling: Type.Optional(Sampling),
    embeddings: Type.Boolean({ default: true, description: "Serve /v1/embeddings and /api/embed with this model." }),
    aliases: Type.Optional(Type.Array(Type.String({ minLength: 1 }), { uniqueItems: true })),
    router: Type.Optional(ModelRouter),
  },
  {
    additionalProperties: false,
    // a local model (file) or a routed one (router), never both
    if: { required: ["router"] },
    then: { properties: { file: { not: {}, description: "must be left out: a Model with router is served by its deployments, not a file" } } },
    // with source, the file is named by the download unless spec.file names it
    else: { if: { required: ["source"] }, then: {}, else: { required: ["file"] } },
  },
);
/** A Model's spec. `file` is typed as present: a Model with `router` (file absent) is served by
 * the providers router and never reaches the code that reads `file` (controllers/kinds/model.ts). */
export type ModelSpec = Static<typeof ModelSpec> & { file: string };
export const Model = envelope("Model", ModelSpec, "A local GGUF model served by node-llama-cpp, or (with router) a model name load-balanced over Provider deployments.");
