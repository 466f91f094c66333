// Shared schema pieces. TypeBox is the one source: the JSON Schema served by
// `svc config schema` and the TypeScript types both come from these definitions.
import { Type, type Static, type TSchema } from "@sinclair/typebox";

/** A secret is only ever a reference: `env:NAME` or `file:/path`. */
export const SecretRef = Type.String({
  pattern: "^(env:[A-Za-z_][A-Za-z0-9_]*|file:.+)$",
  description: "Secret reference: env:NAME or file:/absolute/path. Clear secrets are refused.",
});

export const Name = Type.String({
  minLength: 1,
  maxLength: 253,
  pattern: "^[a-z0-9]([a-z0-9._-]*[a-z0-9])?$",
  description: "Lower-case letters, digits, '.', '_' and '-'; starts and ends alphanumeric.",
});

export const Labels = Type.Record(Type.String({ maxLength: 63 }), Type.String({ maxLength: 253 }));

export const Metadata = Type.Object(
  {
    name: Name,
    labels: Type.Optional(Labels),
    owner: Type.Optional(
      Type.String({
        pattern: "^(config:.+|api)$",
        description: "The source that owns the object (config:<source>, or api), as `svc config export` records it; plan and apply keep it instead of config:<--source>.",
      }),
    ),
  },
  { additionalProperties: false },
);

export const Sampling = Type.Object(
  {
    temperature: Type.Optional(Type.Number({ minimum: 0, maximum: 2 })),
    topP: Type.Optional(Type.Number({ minimum: 0, maximum: 1 })),
    topK: Type.Optional(Type.Integer({ minimum: 0 })),
    minP: Type.Optional(Type.Number({ minimum: 0, maximum: 1 })),
    repeatPenalty: Type.Optional(Type.Number({ minimum: 0 })),
    seed: Type.Optional(Type.Integer()),
    maxTokens: Type.Optional(Type.Integer({ minimum: 1 })),
  },
  { additionalProperties: false },
);
export type Sampling = Static<typeof Sampling>;

/** Envelope of one kind: {apiVersion: svc/v1, kind, metadata, spec}. */
export function envelope<K extends string, S extends TSchema>(kind: K, spec: S, description: string) {
  return Type.Object(
    {
      apiVersion: Type.Literal("svc/v1"),
      kind: Type.Literal(kind),
      metadata: Metadata,
      spec,
    },
    { additionalProperties: false, $id: kind, description },
  );
}
