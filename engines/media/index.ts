// Media: speech transcription, images and videos forwarded to Providers that declare the
// capability (engines/media/providers.ts), jobs tracked in the store (jobs.ts), and a
// provider's credit balance. Upstream failures become 502 upstream_error / 504 upstream_timeout
// with credentials redacted from the message.
import { SvcError } from "../errors";
import type { Host } from "../host";
import { redactSecrets } from "../providers/redact";
import { kindOfUpstreamStatus } from "../providers/http";
import { outboundFetch } from "../net/outbound-guard";
import { MediaJobs } from "./jobs";
import { VideoQuotes } from "./quotes";
import { candidatesFor, capableProviders, longestCallMs, resolveTarget, unavailable, type MediaCandidate, type MediaCapability, type MediaTarget } from "./providers";

export { capableProviders, unavailable, type MediaCandidate, type MediaCapability, type MediaTarget };

export interface Upstream {
  status: number;
  contentType: string;
  body: Response["body"];
  json?: any;
}

export class Media {
  readonly jobs: MediaJobs;
  readonly quotes: VideoQuotes;
  constructor(private readonly svc: Host) {
    this.jobs = new MediaJobs(svc.db.prisma, { shared: !!svc.db.postgresUrl, longestCallMs: () => longestCallMs(svc.store) });
    this.quotes = new VideoQuotes(svc.db.prisma);
  }

  /** Stopping: image calls still running are aborted, their jobs marked interrupted. */
  close(): Promise<void> {
    return this.jobs.close();
  }

  /** The providers that could serve the call, preferred first; the gate keeps those the caller's
   * policy allows and the call goes to the first of them (resolve). */
  candidates(cap: MediaCapability, model?: string, provider?: string): MediaCandidate[] {
    return candidatesFor(this.svc.store, cap, model, provider);
  }

  resolve(c: MediaCandidate): MediaTarget {
    return resolveTarget(c.provider, c.spec, c.upstreamModel);
  }

  /** The target of a stored job's provider (it must still exist and declare the capability). */
  targetOf(provider: string, cap: MediaCapability): MediaTarget {
    const p = capableProviders(this.svc.store, cap).find((x) => x.name === provider);
    if (!p) throw new SvcError("unavailable", "model_unavailable", `provider ${provider} of this job is gone or no longer declares "${cap}"`);
    return resolveTarget(p.name, p.spec);
  }

  /** One upstream call. JSON answers are parsed (json); others stream (body). */
  async forward(t: MediaTarget, method: string, path: string, o: { body?: Buffer | string; contentType?: string; signal?: AbortSignal; stream?: boolean } = {}): Promise<Upstream> {
    const timeout = AbortSignal.timeout(t.timeoutMs);
    const signal = o.signal ? AbortSignal.any([o.signal, timeout]) : timeout;
    let res: Response;
    try {
      res = await outboundFetch()(t.baseUrl + path, {
        method,
        headers: { ...t.headers, ...(o.contentType ? { "content-type": o.contentType } : {}) },
        body: o.body,
        signal,
      });
    } catch (e: any) {
      if (o.signal?.aborted) throw e;
      if (timeout.aborted) throw new SvcError("timeout", "upstream_timeout", `provider ${t.provider} did not answer within ${t.timeoutMs / 1000} s`);
      throw new SvcError("upstream", "upstream_error", `provider ${t.provider} is unreachable: ${redactSecrets(String(e?.cause?.code ?? e?.message ?? e))}`);
    }
    const contentType = res.headers.get("content-type") ?? "application/octet-stream";
    if (!res.ok) {
      const text = redactSecrets((await res.text().catch(() => "")).slice(0, 2000));
      let msg = text;
      try {
        msg = JSON.parse(text)?.error?.message ?? text;
      } catch {
        /* not JSON */
      }
      const code = res.status === 429 ? "rate_limit_exceeded" : res.status === 404 ? "not_found" : res.status >= 500 ? "upstream_error" : res.status === 400 || res.status === 422 ? "invalid_request" : "upstream_error";
      throw new SvcError(kindOfUpstreamStatus(res.status), code, `provider ${t.provider} answered ${res.status}: ${msg || "(no message)"}`);
    }
    if (!o.stream && contentType.includes("json")) return { status: res.status, contentType, body: null, json: await res.json() };
    return { status: res.status, contentType, body: res.body };
  }
}
