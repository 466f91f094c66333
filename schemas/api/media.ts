// Request bodies of the media routes. Image and transcription requests are forwarded to the
// provider as sent (JSON or multipart/form-data): svc reads only the model from them, and the
// provider validates the rest. Video requests are JSON; the quote and consent rules are the quote
// engine's (their own error codes), after the shape.
import { Type } from "@sinclair/typebox";

export const ForwardedBody = Type.Object(
  { model: Type.Optional(Type.String({ description: "picks the provider; absent: the first that offers the operation" })) },
  { additionalProperties: true, description: "forwarded to the provider as sent" },
);
export const VideoBody = Type.Object(
  {
    model: Type.Optional(Type.String({ errorMessage: "model must be a string" })),
    quote_id: Type.Optional(Type.String({ description: "from POST /v1/videos/quote (generations)", errorMessage: "quote_id must be a string" })),
    consent: Type.Optional(Type.Unknown({ description: "true: the caller accepts the quoted price (generations)" })),
  },
  { additionalProperties: true, description: "the provider's video parameters" },
);
export const JobIdBody = Type.Object({ id: Type.String({ description: "the job id (X-Svc-Job-Id of the request)", errorMessage: "id (the X-Svc-Job-Id of an image request) is required" }) }, { additionalProperties: true });
