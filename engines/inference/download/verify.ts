// Verification of downloaded files: the hub's own metadata (Hugging Face answers a HEAD of a
// resolve URL with X-Linked-Size and, for LFS files, X-Linked-Etag = the SHA-256, as
// huggingface_hub reads them) and the SHA-256 of the bytes on disk.
import { createHash } from "node:crypto";
import { createReadStream } from "node:fs";

export interface HubFileMeta {
  sizeBytes?: number;
  sha256?: string;
}

const SHA256 = /^"?(?:W\/)?"?([a-f0-9]{64})"?$/i;

export async function hubFileMeta(url: string, headers: Record<string, string>, signal?: AbortSignal): Promise<HubFileMeta> {
  let res: Response;
  try {
    res = await fetch(url, { method: "HEAD", redirect: "manual", headers, signal });
  } catch {
    return {}; // no metadata: the size the download itself reported still applies
  }
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
