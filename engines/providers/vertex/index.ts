// Vertex AI (type vertex): Gemini's bodies and answers (../gemini) on the regional endpoint,
//   {baseUrl}/projects/{project}/locations/{region}/publishers/google/models/{model}:generateContent
// (baseUrl default https://{region}-aiplatform.googleapis.com/v1), with an OAuth access token
// minted from the service-account key the credential references (auth.ts).
import { SvcError } from "../../errors";
import { geminiChat } from "../gemini";
import type { ProviderAdapter } from "../types";
import { accessToken } from "./auth";

export const VERTEX_DEFAULT_REGION = "us-central1";

export const vertexDefaultBaseUrl = (region: string | undefined) => `https://${region ?? VERTEX_DEFAULT_REGION}-aiplatform.googleapis.com/v1`;

export const vertexAdapter: ProviderAdapter = {
  async chat(t, req, cancel) {
    const v = t.vendor ?? {};
    if (!v.project) throw new SvcError("upstream", "upstream_error", `provider ${t.provider} is not usable: a vertex Provider needs spec.project`);
    if (!t.credential) throw new SvcError("upstream", "upstream_error", `provider ${t.provider} is not usable: a vertex Provider needs a credential (a service-account key by reference)`);
    const token = await accessToken(t.provider, t.credential, v.tokenUrl, t.timeoutMs);
    const region = v.region ?? VERTEX_DEFAULT_REGION;
    const path = `/projects/${encodeURIComponent(v.project)}/locations/${encodeURIComponent(region)}/publishers/google/models/${encodeURIComponent(t.upstreamModel)}`;
    return geminiChat(t, req, cancel, path, { ...(t.headers ?? {}), authorization: `Bearer ${token}` });
  },
};
