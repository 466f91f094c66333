// One svc per test file for the protocol suites: the real server (api/server.ts) on an ephemeral
// port with a temp home, the generated tiny GGUF in its models dir, and Model manifests applied
// at start-up (so the Model controller registers them in the pool). One thread per model.
import { mkdir, writeFile } from "node:fs/promises";
import path from "node:path";
import OpenAI from "openai";
import { ensureTinyModel } from "../../engines/inference/gguf";
import { startTestSvc, tempDir, type TestSvc } from "../helpers/svc";

/** the main model: never unloads during a suite */
export const MODEL = "tiny";
/** a second registration of the same file that unloads after 1 s idle */
export const IDLE_MODEL = "tiny-idle";

export type ProtocolSvc = TestSvc;

/** The official OpenAI client on unauthenticated loopback, sending no key at all. */
export function openaiClient(t: ProtocolSvc): OpenAI {
  return new OpenAI({ baseURL: `${t.url}/v1`, apiKey: "unused", maxRetries: 0, defaultHeaders: { authorization: null } });
}

/** startProtocolSvc with the OpenAI client on it (the suites' beforeAll). */
export async function startWithOpenAI(extra: string[] = []): Promise<{ t: ProtocolSvc; client: OpenAI }> {
  const t = await startProtocolSvc(extra);
  return { t, client: openaiClient(t) };
}

/** One user message, for the OpenAI and Anthropic clients. */
export const user = (content: string) => [{ role: "user" as const, content }];

/** `extra`: more YAML documents (Providers, …) applied at start-up with the Models. */
export async function startProtocolSvc(extra: string[] = []): Promise<ProtocolSvc> {
  const home = await tempDir("svc-protocols-");
  const modelsDir = path.join(home, "models");
  await mkdir(modelsDir, { recursive: true });
  await ensureTinyModel(modelsDir);
  const manifest = path.join(home, "models.yaml");
  const model = (name: string, idle: number) =>
    `apiVersion: svc/v1\nkind: Model\nmetadata:\n  name: ${name}\nspec:\n  file: svc-tiny.gguf\n  threads: 1\n  parallel: 2\n  contextSize: 1024\n  idleUnloadSeconds: ${idle}\n`;
  await writeFile(manifest, [model(MODEL, 0), model(IDLE_MODEL, 1), ...extra].join("---\n"));
  const prev = process.env.SVC_MODELS_DIR;
  delete process.env.SVC_MODELS_DIR; // models live in <home>/models
  try {
    const t = await startTestSvc({ home, config: [manifest] });
    await t.manager.idle();
    // every route must go through the real enforcement pipeline
    if (!t.svc.engines.gateway?.pipeline) {
      await t.stop();
      throw new Error("the gateway engine did not start; see the svc log");
    }
    return t;
  } finally {
    if (prev !== undefined) process.env.SVC_MODELS_DIR = prev;
  }
}

export async function cacheStats(t: TestSvc): Promise<any> {
  const r = await fetch(`${t.url}/admin/cache-stats`);
  return r.json();
}

export async function waitFor(cond: () => Promise<boolean>, timeoutMs = 20_000, stepMs = 50): Promise<void> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    if (await cond()) return;
    if (Date.now() > end) throw new Error("timed out waiting for condition");
    await new Promise((r) => setTimeout(r, stepMs));
  }
}
