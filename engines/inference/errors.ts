// Errors the inference engine raises: the one engine error type (engines/errors.ts) with the
// inference codes; api/ maps them onto each protocol's shape.
import { SvcError, type ErrorKind } from "../errors";

export type InferenceErrorCode = "model_unavailable" | "invalid_request" | "capacity_exceeded" | "context_length_exceeded";

const KIND: Record<InferenceErrorCode, ErrorKind> = {
  model_unavailable: "unavailable",
  invalid_request: "invalid",
  capacity_exceeded: "rate_limited",
  context_length_exceeded: "invalid",
};

export class InferenceError extends SvcError {
  declare readonly code: InferenceErrorCode;
  constructor(code: InferenceErrorCode, message: string, options?: { cause?: unknown }) {
    super(KIND[code], code, `${code}: ${message}`);
    this.name = "InferenceError";
    if (options && "cause" in options) (this as { cause?: unknown }).cause = options.cause;
  }
}

/** The error a cancelled generation ends with (same shape as fetch's). */
export function abortError(signal?: AbortSignal): unknown {
  return signal?.reason ?? new DOMException("The operation was aborted", "AbortError");
}
