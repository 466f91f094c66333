// Errors the inference engine raises; api/ maps `code` and `status` onto each protocol's shape.
export type InferenceErrorCode = "model_unavailable" | "invalid_request" | "capacity_exceeded" | "context_length_exceeded";

const STATUS: Record<InferenceErrorCode, number> = {
  model_unavailable: 503,
  invalid_request: 400,
  capacity_exceeded: 429,
  context_length_exceeded: 400,
};

export class InferenceError extends Error {
  readonly status: number;
  constructor(readonly code: InferenceErrorCode, message: string, options?: { cause?: unknown }) {
    super(`${code}: ${message}`, options);
    this.name = "InferenceError";
    this.status = STATUS[code];
  }
}

/** The error a cancelled generation ends with (same shape as fetch's). */
export function abortError(signal?: AbortSignal): unknown {
  return signal?.reason ?? new DOMException("The operation was aborted", "AbortError");
}
