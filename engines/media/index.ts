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
    // The timeout bounds the answer (headers, and a JSON body); a streamed body (a video's content)
    // is bounded between chunks instead: with one deadline for the whole download, a video that
    // took longer than timeoutSeconds to stream was cut off mid-file.
    const timeout = new AbortController();
    let timer: NodeJS.Timeout | undefined;
    const arm = () => {
      clearTimeout(timer);
      timer = setTimeout(() => timeout.abort(), t.timeoutMs);
      timer.unref?.();
    };
    arm();
    const signal = o.signal ? AbortSignal.any([o.signal, timeout.signal]) : timeout.signal;
    let res: Response;
    try {
      res = await outboundFetch()(t.baseUrl + path, {
        method,
        headers: { ...t.headers, ...(o.contentType ? { "content-type": o.contentType } : {}) },
        body: o.body,
        signal,
      });
    } catch (e: any) {
      clearTimeout(timer);
      if (o.signal?.aborted) throw e;
      if (timeout.signal.aborted) throw new SvcError("timeout", "upstream_timeout", `provider ${t.provider} did not answer within ${t.timeoutMs / 1000} s`);
      throw new SvcError("upstream", "upstream_error", `provider ${t.provider} is unreachable: ${redactSecrets(String(e?.cause?.code ?? e?.message ?? e))}`);
    }
    const contentType = res.headers.get("content-type") ?? "application/octet-stream";
    if (!res.ok) {
      const text = redactSecrets((await res.text().catch(() => "")).slice(0, 2000));
      clearTimeout(timer);
      let msg = text;
      try {
        msg = JSON.parse(text)?.error?.message ?? text;
      } catch {
        /* not JSON */
      }
      // 401/403 refuse svc's own credential at the provider, not the caller's key: a 502, as on
      // chat (providers/http.ts statusError); passed through they told the client its key was bad
      if (res.status === 401 || res.status === 403) throw new SvcError("upstream", "upstream_error", `provider ${t.provider} rejected the gateway's credential (${res.status}): ${msg || "(no message)"}`);
      const code = res.status === 429 ? "rate_limit_exceeded" : res.status === 404 ? "not_found" : res.status >= 500 ? "upstream_error" : res.status === 400 || res.status === 422 ? "invalid_request" : "upstream_error";
      throw new SvcError(kindOfUpstreamStatus(res.status), code, `provider ${t.provider} answered ${res.status}: ${msg || "(no message)"}`);
    }
    if (!o.stream && contentType.includes("json")) {
      try {
        return { status: res.status, contentType, body: null, json: await res.json() };
      } catch (e) {
        // a body that stalls or is not JSON is the provider's failure (504 / 502), not a 500
        if (o.signal?.aborted) throw e;
        if (timeout.signal.aborted) throw new SvcError("timeout", "upstream_timeout", `provider ${t.provider} did not answer within ${t.timeoutMs / 1000} s`);
        throw new SvcError("upstream", "upstream_error", `provider ${t.provider} answered ${res.status} with a body that is not JSON: ${redactSecrets(String((e as Error)?.message ?? e))}`);
      } finally {
        clearTimeout(timer);
      }
    }
    if (!res.body) {
      clearTimeout(timer);
      return { status: res.status, contentType, body: null };
    }
    // each chunk re-arms the timeout; the end of the body clears it
    arm();
    const body = res.body.pipeThrough(
      new TransformStream<Uint8Array, Uint8Array>({
        transform(chunk, c) {
          arm();
          c.enqueue(chunk);
        },
        flush() {
          clearTimeout(timer);
        },
      }),
    );
    return { status: res.status, contentType, body };
  }
}
