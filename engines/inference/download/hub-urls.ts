// Where each file of a source lives at the hub, so that verification can ask the hub for its
// size and SHA-256 (verify.ts). node-llama-cpp resolves the same URLs for its downloader but does
// not expose them, so svc resolves them itself, the same way: a tag (hf:user/repo:Q4_K_M) by the
// hub's llama.cpp manifest, a file path by /<user>/<repo>/resolve/<branch>/<path>, and the other
// parts of a split GGUF by the -0000k-of-0000n naming gguf-split uses.

const DEFAULT_ENDPOINT = "https://huggingface.co/";
const SPLIT = /-(\d{5})-of-(\d{5})\.gguf$/i;
const QUANT_TAG = /^(?:I?Q\d(?:_[A-Z0-9]+)*|F16|BF16|F32)$/i;

export interface HubUrlOptions {
  endpoint?: string;
  token?: string;
  signal?: AbortSignal;
}

/** The hub endpoint node-llama-cpp uses with these options (same order of precedence). */
export function hubEndpoint(endpoint?: string): string {
  const e = endpoint ?? process.env.MODEL_ENDPOINT ?? process.env.HF_ENDPOINT ?? DEFAULT_ENDPOINT;
  return e.endsWith("/") ? e : `${e}/`;
}

/** Whether `url` is on the hub (its endpoint's host, or huggingface.co/hf.co with the default
 * endpoint): the only hosts an HF token may be sent to. The same test node-llama-cpp applies
 * before it sends the token (isHuggingFaceUrl), so svc's own requests leak it nowhere else. */
export function isHubUrl(url: string, endpoint?: string): boolean {
  let host: string;
  try {
    host = new URL(url).hostname;
  } catch {
    return false;
  }
  const e = hubEndpoint(endpoint);
  if (host === new URL(e).hostname) return true;
  return (e === DEFAULT_ENDPOINT || e === "https://hf.co/") && (host === "huggingface.co" || host === "hf.co");
}

/** The URL of every file of `uri` (an hf: URI as parseSource normalises it, or a URL): the
 * entry file and the other parts of a split one; empty when the hub's manifest does not say. */
export async function hubFileUrls(uri: string, o: HubUrlOptions = {}): Promise<string[]> {
  const entry = await hubEntryUrl(uri, o);
  if (!entry) return [];
  const u = new URL(entry);
  // binary-split parts (.gguf.part1of3) are joined into one file by the downloader: no per-file metadata
  if (/\.part\d+of\d+$/i.test(u.pathname)) return [];
  const m = SPLIT.exec(u.pathname);
  if (!m) return [entry];
  return Array.from({ length: Number(m[2]) }, (_, i) => {
    const p = new URL(entry);
    p.pathname = u.pathname.slice(0, -m[0].length) + `-${String(i + 1).padStart(5, "0")}-of-${m[2]}.gguf`;
    return p.href;
  });
}

/** The URL of the (first) file of `uri`; undefined when the hub's manifest does not say. */
export function hubEntryUrl(uri: string, o: HubUrlOptions = {}): Promise<string | undefined> {
  return entryUrl(uri, o).catch(() => undefined);
}

async function entryUrl(uri: string, o: HubUrlOptions): Promise<string | undefined> {
  if (!uri.startsWith("hf:")) return blobToResolve(uri, o.endpoint);
  const [user, model, ...rest] = uri.slice(3).split("/");
  if (!user || !model) return undefined;
  const base = hubEndpoint(o.endpoint);
  const resolve = (repo: string, branch: string, filePath: string) =>
    `${base}${encodeURIComponent(user)}/${encodeURIComponent(repo)}/resolve/${encodeURIComponent(branch)}/${filePath.split("/").map(encodeURIComponent).join("/")}`;
  if (rest.length === 0 || model.includes(":")) {
    const [repo = "", ...tagParts] = model.split(":");
    const tag = tagParts.join(":") || "latest";
    const manifest = `${base}v2/${encodeURIComponent(user)}/${encodeURIComponent(repo)}/manifests/${encodeURIComponent(QUANT_TAG.test(tag) ? tag.toUpperCase() : tag)}`;
    // llama.cpp's User-Agent is what makes the hub answer with the ggufFile field
    const res = await fetch(manifest, { headers: { "user-agent": "llama-cpp", ...(o.token ? { authorization: `Bearer ${o.token}` } : {}) }, signal: o.signal });
    if (!res.ok) return undefined;
    const file = ((await res.json()) as { ggufFile?: { rfilename?: unknown } }).ggufFile?.rfilename;
    return typeof file === "string" && file ? resolve(repo, "main", file) : undefined;
  }
  const joined = rest.join("/");
  const hash = joined.indexOf("#");
  return hash < 0 ? resolve(model, "main", joined) : resolve(model, joined.slice(hash + 1) || "main", joined.slice(0, hash));
}

/** A hub page URL (/<user>/<repo>/blob/...) names the file at /resolve/, as the downloader reads it. */
function blobToResolve(url: string, endpoint?: string): string {
  const u = new URL(url);
  const hubHosts = ["huggingface.co", "hf.co", new URL(hubEndpoint(endpoint)).hostname];
  const parts = u.pathname.split("/");
  if (!hubHosts.includes(u.hostname) || parts[3] !== "blob") return url;
  parts[3] = "resolve";
  u.pathname = parts.join("/");
  return u.href;
}
