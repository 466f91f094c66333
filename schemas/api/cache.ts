// The response cache's administrative body (POST /admin/response-cache/purge; docs/cache.md).
import { Type } from "@sinclair/typebox";

export const CachePurgeBody = Type.Object(
  {
    model: Type.Optional(Type.String({ minLength: 1, maxLength: 512, errorMessage: '"model" must be a model name' })),
    key: Type.Optional(Type.String({ minLength: 1, maxLength: 512, errorMessage: '"key" must be an API key id' })),
  },
  { additionalProperties: false, description: "Which answers to drop: a model's, a key's (those it stored), both, or (empty) every answer." },
);
