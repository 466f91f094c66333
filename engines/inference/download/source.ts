// What a Model source names: a Hugging Face URI (hf:user/repo:quant, hf:user/repo/file#branch; Ollama's
// hf.co/user/repo:quant spelling is accepted too) or an http(s) URL. node-llama-cpp resolves and
// downloads it; this only validates, normalises and describes it for listings.
import { invalidRequest, type SvcError } from "../../errors";

export interface SourceInfo {
  /** the URI handed to node-llama-cpp */
  uri: string;
  kind: "hf" | "url";
  /** user/repo for hf: URIs */
  repo?: string;
  /** the quantisation tag when the URI names one (hf:user/repo:Q4_K_M) */
  quant?: string;
}

const QUANT_TAG = /^(?:I?Q\d(?:_[A-Z0-9]+)*|F16|BF16|F32)$/i;
const HF = /^(?:hf:|hf:\/\/|huggingface:|hf\.co\/|huggingface\.co\/)([^/\s:#]+)\/([^\s]+)$/;

export function parseSource(raw: string): SourceInfo {
  const s = raw.trim();
  const hf = HF.exec(s);
  if (hf) {
    const [, user, rest] = hf as unknown as [string, string, string];
    const [repoPart, ...pathParts] = rest.split("/");
    const [repo, tag] = (repoPart ?? "").split(":");
    if (!repo) throw badSource(raw);
    const quant = pathParts.length ? quantOf(pathParts.join("/")) : tag && tag.toLowerCase() !== "latest" ? tag.toUpperCase() : undefined;
    // a quantisation tag is one source however it is spelled (node-llama-cpp and the hub read it
    // in capitals): hf:u/r:q4_k_m kept its own uri, so its record, staging dir and download were
    // not those of hf:u/r:Q4_K_M, and each pull of the other spelling fetched the file again
    const tagPart = repoPart?.slice(repo.length) ?? "";
    const normal = !pathParts.length && tag && QUANT_TAG.test(tag) && tagPart === `:${tag}` ? `${repo}:${tag.toUpperCase()}` : rest;
    return { uri: `hf:${user}/${normal}`, kind: "hf", repo: `${user}/${repo}`, ...(quant ? { quant } : {}) };
  }
  if (/^https?:\/\/\S+$/.test(s)) {
    try {
      const u = new URL(s);
      return { uri: u.href, kind: "url", ...(quantOf(u.pathname) ? { quant: quantOf(u.pathname) } : {}) };
    } catch {
      throw badSource(raw);
    }
  }
  throw badSource(raw);
}

function badSource(raw: string): SvcError {
  return invalidRequest(
    `not a model source: ${JSON.stringify(raw)}; use hf:<user>/<repo>:<quant>, hf:<user>/<repo>/<file>.gguf#<branch>, or an https:// URL`, "source");
}

/** The quantisation a GGUF file name carries (model.Q4_K_M.gguf, model-q8_0-00001-of-00002.gguf). */
export function quantOf(fileName: string): string | undefined {
  const m = /[.\-_]((?:I?Q\d(?:_[A-Z0-9]+)*)|F16|BF16|F32)(?:-\d{5}-of-\d{5})?\.gguf$/i.exec(fileName);
  return m?.[1]?.toUpperCase();
}
