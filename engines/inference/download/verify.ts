// Verification of downloaded files: the hub's own metadata (Hugging Face answers a HEAD of a
// resolve URL with X-Linked-Size and, for LFS files, X-Linked-Etag = the SHA-256, as
// huggingface_hub reads them) and the SHA-256 of the bytes on disk.
import { createHash } from "node:crypto";
import { createReadStream } from "node:fs";

export interface HubFileMeta {
  sizeBytes?: number;
  sha256?: string;
  /** why the file cannot be fetched (unreachable, missing, gated) */
  problem?: string;
}

const SHA256 = /^"?(?:W\/)?"?([a-f0-9]{64})"?$/i;

/** What the hub says of a file. A refused connection or a missing file is a `problem` at once:
 * the downloader would retry it for minutes and cannot be cancelled meanwhile. */
export async function hubFileMeta(url: string, headers: Record<string, string>, signal?: AbortSignal): Promise<HubFileMeta> {
  const shown = url.replace(/\?download=true$/, "");
  let res: Response;
  try {
    res = await fetch(url, { method: "HEAD", redirect: "manual", headers, signal });
  } catch (e) {
    if (signal?.aborted) throw signal.reason;
    const cause = (e as { cause?: { code?: string; message?: string } }).cause;
    return { problem: `cannot reach ${new URL(url).host}: ${cause?.code ?? cause?.message ?? (e as Error).message}` };
  }
  if (res.status === 401 || res.status === 403) return { problem: `${shown} needs access (${res.status}): a gated repository takes a token (download.token, or --token env:HF_TOKEN)` };
  if (res.status === 404) return { problem: `${shown} does not exist (404)` };
  if (res.status >= 400 && res.status < 500) return { problem: `${shown} answered ${res.status}` };
  const h = res.headers;
  const etag = h.get("x-linked-etag") ?? h.get("etag") ?? "";
  const size = h.get("x-linked-size") ?? (res.status === 200 ? h.get("content-length") : null);
  const sha = SHA256.exec(etag.trim())?.[1]?.toLowerCase();
  return { ...(size && /^\d+$/.test(size) ? { sizeBytes: Number(size) } : {}), ...(sha ? { sha256: sha } : {}) };
}

export function sha256File(file: string, onBytes?: (n: number) => void): Promise<string> {
  return new Promise((resolve, reject) => {
    const hash = createHash("sha256");
    createReadStream(file, { highWaterMark: 1 << 20 })
      .on("data", (b) => {
        hash.update(b);
        onBytes?.(b.length);
      })
      .on("error", reject)
      .on("end", () => resolve(hash.digest("hex")));
  });
}
