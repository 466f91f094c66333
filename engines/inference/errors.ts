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

/** An inference failure: an SvcError with an inference code (its message starts with the code). */
export function inferenceError(code: InferenceErrorCode, message: string, options?: { cause?: unknown }): SvcError {
  const e = new SvcError(KIND[code], code, `${code}: ${message}`);
  if (options && "cause" in options) (e as { cause?: unknown }).cause = options.cause;
  return e;
}

/** The error a cancelled generation ends with (same shape as fetch's). */
export function abortError(signal?: AbortSignal): unknown {
  return signal?.reason ?? new DOMException("The operation was aborted", "AbortError");
}
