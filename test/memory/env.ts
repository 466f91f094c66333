// Shared set-up of the memory tests: a real svc (gateway fixtures), the scripted loopback
// provider of test/agents standing in for both the agents' model and the extraction model, and
// a ManualClock injected into the memory engine so debounce and consolidation run without sleeps.
import { startEnv, type Env } from "../gateway/fixtures";
import { until } from "../helpers/http";
import { scriptedProvider, type ChatBody, type ScriptedProvider } from "../agents/scripted";
import { ManualClock } from "../../engines/memory/clock";
import { embeddedMemory, type MemoryEngine } from "../../engines/memory/engine";
import type { SqliteMemory } from "../../engines/memory/sqlite-backend";

export const EXTRACTOR = "extractor";

export interface MemEnv extends Env {
  up: ScriptedProvider;
  clock: ManualClock;
  mem: MemoryEngine<SqliteMemory>;
  /** apply an Agent with memory on (defaultModel: the script model of the same name) */
  agent(name: string, spec?: Record<string, unknown>): Promise<void>;
  memoryConfig(spec: Record<string, unknown>): Promise<void>;
  ingest(body: Record<string, unknown>): Promise<{ status: number; json: any }>;
  /** move the clock and wait for what it started */
  advance(ms: number): Promise<void>;
  /** extraction calls the provider saw */
  extractions(): ChatBody[];
}

/** The extraction model's script: a summary of the first user line, a fact for each
 * "remember that X" line, identity for "my name is X", salience from "[salience=0.x]". */
export function extractorAnswer(b: ChatBody): string {
  const convo = b.messages.find((m) => m.role === "user")?.content ?? "";
  const users = [...convo.matchAll(/^(?:\[[^\]]*\] )?User: (.*)$/gm)].map((m) => m[1]);
  const facts = users.flatMap((u) => [...u.matchAll(/remember that ([^.]+)/gi)].map((m) => m[1].trim().replace(/^./, (c) => c.toUpperCase()) + "."));
  const name = /my name is (\w+)/i.exec(convo)?.[1];
  const sal = /\[salience=([0-9.]+)\]/.exec(convo);
  const first = (users[0] ?? "").replace(/\[salience=[0-9.]+\]/, "").trim();
  return JSON.stringify({
    episode: { summary: `The user talked about ${first}`, topics: first.split(/\W+/).filter((w) => w.length > 3).slice(0, 3), decisions: [], action_items: [], salience: sal ? Number(sal[1]) : 0.8 },
    entities: name ? [{ name, type: "person" }] : [],
    identity: name ? [{ key: "user_name", value: name }] : [],
    facts,
  });
}

export async function startMemEnv(models: string[] = []): Promise<MemEnv> {
  const env = await startEnv();
  const up = await scriptedProvider();
  up.script(EXTRACTOR, (b) => ({ text: extractorAnswer(b) }));
  const all = [...new Set([EXTRACTOR, ...models])];
  await env.apply([
    { kind: "Provider", name: "scripted", spec: { type: "openai", baseUrl: up.baseUrl, timeoutSeconds: 10, models: all.map((name) => ({ name, inputPerMillion: 1, outputPerMillion: 2 })) } },
    { kind: "MemoryConfig", name: "memory", spec: { extractionModel: EXTRACTOR } },
  ]);
  if (!env.svc.svc.engines.memory) throw new Error("memory engine did not start");
  const mem = embeddedMemory(env.svc.svc.engines.memory);
  const clock = new ManualClock();
  mem.useClock(clock);
  const ready = async (kind: string, name: string) => {
    await until(() => {
      const o = env.svc.svc.store.get(kind, name);
      const c = o?.status.conditions?.find((x) => x.type === "Ready");
      return !!o && o.status.observedGeneration === o.generation && c?.status === "True";
    }, 15_000);
  };
  return Object.assign(env, {
    up,
    clock,
    mem,
    async agent(name: string, spec: Record<string, unknown> = {}) {
      await env.apply([{ kind: "Agent", name, spec: { instructions: `You are ${name}.`, defaultModel: name, memory: true, maxIterations: 4, ...spec } }]);
      await ready("Agent", name);
    },
    async memoryConfig(spec: Record<string, unknown>) {
      await env.apply([{ kind: "MemoryConfig", name: "memory", spec: { extractionModel: EXTRACTOR, ...spec } }]);
      await ready("MemoryConfig", "memory");
    },
    ingest: (body: Record<string, unknown>) => env.api("POST", "/memory/ingest", body),
    async advance(ms: number) {
      clock.advance(ms);
      await env.svc.svc.engines.memory!.idle();
    },
    extractions: () => up.requests.filter((r) => r.model === EXTRACTOR),
    async stop() {
      await env.svc.stop();
      await up.close();
    },
  });
}
