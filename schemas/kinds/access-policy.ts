import { Type, type Static } from "@sinclair/typebox";
import { envelope } from "../common";

const HHMM = Type.String({ pattern: "^([01][0-9]|2[0-3]):[0-5][0-9]$" });

export const PolicyCondition = Type.Object(
  {
    not_in: Type.Optional(Type.Array(Type.String({ minLength: 1 }))),
    time_between: Type.Optional(
      Type.Object({ start: HHMM, end: HHMM, timezone: Type.String({ minLength: 1, default: "UTC" }) }, { additionalProperties: false }),
    ),
    monthly_budget_under: Type.Optional(Type.Number({ minimum: 0 })),
    monthly_budget_over: Type.Optional(Type.Number({ minimum: 0 })),
  },
  { additionalProperties: false, minProperties: 1, maxProperties: 1 },
);

// The gate's actions (engines/gateway/gate.ts, docs/gate.md). `*` inside an action is a glob
// (media:*, memory:*); a lone "*" is every action.
const ACTION =
  "^(\\*|chat:completions|chat:stream|embeddings|media:(\\*|[a-z_]+(\\.[a-z_]+)?)|tools:call|agents:run|agents:dispatch|memory:(\\*|[a-z_]+))$";
const ACTIONS_DOC =
  "chat:completions, chat:stream, embeddings, media:<operation> (media:transcription, media:images.generations, media:images.edits, media:images.upscale, media:videos.quote, media:videos.generations, ...; media:* for all), tools:call (resource tool:<name>), agents:run, agents:dispatch, memory:<operation> (memory:* for all), or *";

export const PolicyStatement = Type.Object(
  {
    effect: Type.Union([Type.Literal("Allow"), Type.Literal("Deny")]),
    actions: Type.Array(Type.String({ pattern: ACTION, description: ACTIONS_DOC }), { minItems: 1 }),
    resources: Type.Array(Type.String({ pattern: "^(\\*|model:.+|provider:.+|tool:.+)$" }), { minItems: 1 }),
    condition: Type.Optional(PolicyCondition),
  },
  { additionalProperties: false },
);
export type PolicyStatement = Static<typeof PolicyStatement>;

export const PolicyDocument = Type.Object(
  {
    version: Type.Literal("2024-01-01"),
    statements: Type.Array(PolicyStatement),
  },
  { additionalProperties: false },
);
export type PolicyDocument = Static<typeof PolicyDocument>;

export const AccessPolicy = envelope("AccessPolicy", PolicyDocument, "An access policy document keys bind by name.");
