// Reading a request body into one Buffer, as raw-body did for api/body.ts (same limit, length
// and abort checks, same error types), without its per-request AsyncResource, error objects
// made up front and decoder plumbing: the inference hot path reads one body a request.
import type { IncomingMessage } from "node:http";

/** A body that could not be read; `type` is raw-body's ("entity.too.large", "request.aborted", …). */
export class BodyReadError extends Error {
  constructor(
    readonly type: "entity.too.large" | "request.aborted" | "request.size.invalid" | "stream.not.readable",
    message: string,
  ) {
    super(message);
  }
}

/** The whole body of `req`, refused past `limit` bytes or when it does not match the declared
 * content-length. On a refusal the stream is left paused (the caller answers and closes). */
export function readBody(req: IncomingMessage, limit: number, lengthHeader: string | undefined): Promise<Buffer> {
  const length = lengthHeader ? parseInt(lengthHeader, 10) : NaN;
  if (length > limit) return Promise.reject(new BodyReadError("entity.too.large", "request entity too large"));
  if (!req.readable) return Promise.reject(new BodyReadError("stream.not.readable", "stream is not readable"));
  return new Promise<Buffer>((resolve, reject) => {
    const chunks: Buffer[] = [];
    let received = 0;
    const cleanup = () => {
      req.removeListener("data", onData);
      req.removeListener("end", onEnd);
      req.removeListener("error", onError);
      req.removeListener("close", onClose);
    };
    const fail = (e: Error) => {
      cleanup();
      req.unpipe();
      req.pause();
      reject(e);
    };
    const onData = (c: Buffer) => {
      received += c.length;
      if (received > limit) fail(new BodyReadError("entity.too.large", "request entity too large"));
      else chunks.push(c);
    };
    const onEnd = () => {
      cleanup();
      if (!Number.isNaN(length) && received !== length) reject(new BodyReadError("request.size.invalid", "request size did not match content length"));
      else resolve(chunks.length === 1 ? chunks[0] : Buffer.concat(chunks, received));
    };
    const onError = (e: Error) => fail(e);
    // a request that closes before its end was aborted by the client
    const onClose = () => fail(new BodyReadError("request.aborted", "request aborted"));
    req.on("data", onData);
    req.on("end", onEnd);
    req.on("error", onError);
    req.on("close", onClose);
  });
}
