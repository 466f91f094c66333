/** Owner recorded on objects applied from a manifest source (a file, folder or client name). */
export function ownerFor(source: string): string {
  return "config:" + source;
}

/** Owner of objects made through the HTTP API (e.g. POST /v1/api-keys): never pruned. */
export const API_OWNER = "api";
