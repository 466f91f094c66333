// The svc both image tests run against (images.test.ts: images in user messages;
// tool-images.test.ts: images in tool results): a stand-in for OpenAI-compatible, Anthropic and
// Ollama upstreams, Azure, Bedrock and Gemini stand-ins checking their vendors' rules, and the
// local tiny text model, each served as `<prefix>-<type>` (openai, claude, ollama, azure,
// bedrock, gemini; `tiny` is the local one).
import { afterAll, beforeAll } from "vitest";
import Anthropic from "@anthropic-ai/sdk";
import { Ollama } from "ollama";
import { ensureTinyModel } from "../../engines/inference";
import { startEnv, provider, standIn, type Env, type StandIn } from "../gateway/fixtures";
import { until } from "../helpers/http";
import { azureStandIn } from "./standins/azure";
import { bedrockStandIn } from "./standins/bedrock";
import { geminiStandIn } from "./standins/gemini";

// a 1x1 PNG
export const PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==";
export const PNG_URL = `data:image/png;base64,${PNG}`;
export const MODEL_ID = "anthropic.claude-3-5-sonnet-20240620-v1:0";
const SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY";

export interface VisionEnv {
  env: Env;
  up: StandIn;
  az: Awaited<ReturnType<typeof azureStandIn>>;
  br: Awaited<ReturnType<typeof bedrockStandIn>>;
  gm: Awaited<ReturnType<typeof geminiStandIn>>;
  secret: string;
  anthropic(): Anthropic;
  ollama(): Ollama;
  close(): Promise<void>;
}

/** `tag` keeps each file's credentials (environment variables, access key id) its own. */
export async function startVisionEnv(prefix: string, tag: string): Promise<VisionEnv> {
  const v = `SVC_${tag}`;
  const akid = `AKID${tag}`.padEnd(18, "0").slice(0, 18);
  process.env[`${v}_AZ_KEY`] = `azure-key-${tag.toLowerCase()}-0123456789`;
  process.env[`${v}_GM_KEY`] = `AIzaSy${tag}Key0123456789abcdefghijk`;
  process.env[`${v}_BR_CRED`] = `${akid}:${SECRET}`;
  const up = await standIn();
  const az = await azureStandIn({ apiKey: process.env[`${v}_AZ_KEY`]!, deployments: ["vision"] });
  const br = await bedrockStandIn({ region: "us-east-1", keys: { [akid]: SECRET }, models: [MODEL_ID] });
  const gm = await geminiStandIn({ apiKey: process.env[`${v}_GM_KEY`]!, models: ["gemini-2.0-flash"] });
  const env = await startEnv();
  await ensureTinyModel(env.svc.svc.modelsDir);
  await env.apply([
    provider("oai", up, [{ name: `${prefix}-openai`, upstreamName: "gpt-4o" }]),
    provider("claude", up, [{ name: `${prefix}-claude`, upstreamName: "claude-sonnet-4" }], { type: "anthropic" }),
    { kind: "Provider", name: "llava", spec: { type: "ollama", baseUrl: `http://127.0.0.1:${up.port}`, timeoutSeconds: 5, models: [{ name: `${prefix}-ollama`, upstreamName: "llava" }] } },
    { kind: "Provider", name: "azure", spec: { type: "azure-openai", baseUrl: az.origin, credential: `env:${v}_AZ_KEY`, timeoutSeconds: 5, models: [{ name: `${prefix}-azure`, upstreamName: "vision" }] } },
    { kind: "Provider", name: "bedrock", spec: { type: "bedrock", baseUrl: br.origin, region: "us-east-1", credential: `env:${v}_BR_CRED`, timeoutSeconds: 5, models: [{ name: `${prefix}-bedrock`, upstreamName: MODEL_ID }] } },
    { kind: "Provider", name: "google", spec: { type: "gemini", baseUrl: `${gm.origin}/v1beta`, credential: `env:${v}_GM_KEY`, timeoutSeconds: 5, models: [{ name: `${prefix}-gemini`, upstreamName: "gemini-2.0-flash" }] } },
    { kind: "Model", name: "tiny", spec: { file: "svc-tiny.gguf", threads: 1, contextSize: 512, parallel: 1 } },
  ]);
  await until(() => env.svc.svc.store.get("Model", "tiny")?.status.conditions?.[0]?.status === "True", 20_000);
  const secret = (await env.key()).secret;
  return {
    env, up, az, br, gm, secret,
    anthropic: () => new Anthropic({ baseURL: env.url, apiKey: secret, maxRetries: 0 }),
    ollama: () => new Ollama({ host: env.url, headers: { authorization: `Bearer ${secret}` } }),
    async close() {
      await env.stop();
      await Promise.all([up.close(), az.close(), br.close(), gm.close()]);
    },
  };
}

/** The environment of one test file: started before its tests, closed after them. The fields of
 * what it returns are set once the environment has started. */
export function useVisionEnv(prefix: string, tag: string): VisionEnv {
  const v = {} as VisionEnv;
  beforeAll(async () => {
    Object.assign(v, await startVisionEnv(prefix, tag));
  });
  afterAll(async () => {
    await v.close?.();
  });
  return v;
}

/** the last request body a stand-in recorded */
export const lastBody = (requests: Array<{ body: any }>) => requests[requests.length - 1].body;
