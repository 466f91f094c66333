// The extraction call of a distillation: one request per session, through the gateway pipeline,
// constrained to a JSON Schema (response_format json_schema upstream; a GBNF grammar on local
// models), and a tolerant reader of what comes back.
import type { ChatMessage, ChatRequest } from "../chat/types";
import type { Extraction, SignalRow } from "./types";

/** Distillation output contract (also the grammar of local models). */
export const extractionSchema = {
  type: "object",
  properties: {
    episode: {
      type: "object",
      properties: {
        summary: { type: "string" },
        topics: { type: "array", items: { type: "string" } },
        decisions: { type: "array", items: { type: "string" } },
        action_items: { type: "array", items: { type: "string" } },
        salience: { type: "number", minimum: 0, maximum: 1 },
      },
      required: ["summary", "topics", "decisions", "action_items", "salience"],
      additionalProperties: false,
    },
    entities: {
      type: "array",
      items: { type: "object", properties: { name: { type: "string" }, type: { type: "string" }, description: { type: "string" } }, required: ["name"], additionalProperties: false },
    },
    identity: {
      type: "array",
      items: { type: "object", properties: { key: { type: "string" }, value: { type: "string" } }, required: ["key", "value"], additionalProperties: false },
    },
    facts: { type: "array", items: { type: "string" } },
  },
  required: ["episode", "entities", "identity", "facts"],
  additionalProperties: false,
} as const;

const INSTRUCTIONS = `You distill a conversation between a user and an AI agent into long-term memory.
Answer with one JSON object only:
- episode: summary (2-4 sentences), topics, decisions, action_items, salience (0..1: how much this session will matter later)
- entities: people, projects, places, products mentioned ({name, type, description})
- identity: stable facts about the user or the agent as {key, value} (name, role, preferences); only changes or new ones
- facts: short self-contained statements worth remembering across sessions ("The user's dog is called Rex.")
Leave arrays empty when there is nothing to keep.`;

export const MAX_TRANSCRIPT_CHARS = 48_000;

export function extractionRequest(model: string, agent: string, signals: SignalRow[]): ChatRequest {
  let transcript = signals
    .map((s) => `${s.sessionDate ? `[${s.sessionDate}] ` : ""}User: ${s.userText}\nAssistant: ${s.assistantText}`)
    .join("\n\n");
  // the most recent turns matter most: keep the tail when a session is very long
  if (transcript.length > MAX_TRANSCRIPT_CHARS) transcript = "…" + transcript.slice(-MAX_TRANSCRIPT_CHARS);
  const project = signals.find((s) => s.project)?.project;
  const messages: ChatMessage[] = [
    { role: "system", content: INSTRUCTIONS },
    { role: "user", content: `Agent: ${agent}${project ? `\nProject: ${project}` : ""}\n\nConversation:\n${transcript}` },
  ];
  return { model, messages, maxTokens: 1024, sampling: { temperature: 0 }, responseSchema: extractionSchema as unknown as Record<string, unknown>, stream: false, metadata: { purpose: "memory_extraction" } };
}

const strs = (v: unknown, max = 50): string[] => (Array.isArray(v) ? v.filter((x): x is string => typeof x === "string" && !!x.trim()).map((x) => x.trim().slice(0, 2000)).slice(0, max) : []);

/** Parse and normalise the model's answer; throws with a short reason when it is unusable. */
export function parseExtraction(text: string): Extraction {
  let raw = text.trim();
  const fence = /^```(?:json)?\s*([\s\S]*?)```$/.exec(raw);
  if (fence) raw = fence[1].trim();
  let v: any;
  try {
    v = JSON.parse(raw);
  } catch {
    const a = raw.indexOf("{");
    const b = raw.lastIndexOf("}");
    try {
      v = a >= 0 && b > a ? JSON.parse(raw.slice(a, b + 1)) : undefined;
    } catch {
      v = undefined;
    }
  }
  if (!v || typeof v !== "object") throw new Error("invalid_json");
  const ep = v.episode;
  if (!ep || typeof ep.summary !== "string" || !ep.summary.trim()) throw new Error("missing_episode_summary");
  const sal = typeof ep.salience === "number" && Number.isFinite(ep.salience) ? Math.min(1, Math.max(0, ep.salience)) : 0.5;
  return {
    episode: { summary: ep.summary.trim().slice(0, 4000), topics: strs(ep.topics), decisions: strs(ep.decisions), action_items: strs(ep.action_items), salience: sal },
    entities: (Array.isArray(v.entities) ? v.entities : [])
      .filter((e: any) => e && typeof e.name === "string" && e.name.trim())
      .slice(0, 50)
      .map((e: any) => ({ name: e.name.trim().slice(0, 200), ...(typeof e.type === "string" ? { type: e.type.slice(0, 100) } : {}), ...(typeof e.description === "string" ? { description: e.description.slice(0, 1000) } : {}) })),
    identity: (Array.isArray(v.identity) ? v.identity : [])
      .filter((i: any) => i && typeof i.key === "string" && i.key.trim() && typeof i.value === "string")
      .slice(0, 50)
      .map((i: any) => ({ key: i.key.trim().slice(0, 200), value: i.value.slice(0, 2000) })),
    facts: strs(v.facts, 100),
  };
}
