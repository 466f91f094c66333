// AWS Bedrock (type bedrock): the Converse API, POST {baseUrl}/model/{modelId}/converse and
// /converse-stream, SigV4-signed (sign.ts) for the manifest's region; the default endpoint is
// https://bedrock-runtime.{region}.amazonaws.com.
import { syncEvents } from "../../chat/collect";
import { SvcError } from "../../errors";
import { postForJson, postJson, splitUrl } from "../http";
import { primed, type ProviderAdapter } from "../types";
import { toConverseBody } from "./request";
import { converseEvents } from "./response";
import { parseAwsCredentials, signedHeaders } from "./sign";
import { converseStreamEvents } from "./stream";

export const BEDROCK_DEFAULT_REGION = "us-east-1";
export const bedrockDefaultBaseUrl = (region: string | undefined) => `https://bedrock-runtime.${region ?? BEDROCK_DEFAULT_REGION}.amazonaws.com`;

export const bedrockAdapter: ProviderAdapter = {
  async chat(t, req, cancel) {
    if (!t.credential) throw new SvcError("upstream", "upstream_error", `provider ${t.provider} is not usable: a bedrock Provider needs a credential (AWS keys by reference)`);
    const creds = parseAwsCredentials(t.provider, t.credential);
    const region = t.vendor?.region ?? BEDROCK_DEFAULT_REGION;
    const path = `/model/${encodeURIComponent(t.upstreamModel)}/${req.stream ? "converse-stream" : "converse"}`;
    const { origin, prefix } = splitUrl(t.baseUrl!);
    const body = JSON.stringify(toConverseBody(t, req));
    const accept = req.stream ? "application/vnd.amazon.eventstream" : "application/json";
    const base = { "content-type": "application/json", accept, ...(t.headers ?? {}) };
    const headers = { ...base, ...(await signedHeaders(creds, region, new URL(origin + prefix + path), base, body)) };
    if (!req.stream) {
      const j = await postForJson(t.provider, t.baseUrl!, path, headers, body, t.timeoutMs, cancel);
      return syncEvents(converseEvents(t, req, j));
    }
    const res = await postJson(t.provider, t.baseUrl!, path, headers, body, t.timeoutMs, cancel);
    return primed(converseStreamEvents(t, req, res, cancel));
  },
};
