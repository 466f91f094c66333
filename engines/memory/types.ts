// Internal shapes of the memory engine (no HTTP here; api/routes/memory.ts shapes responses).

/** Searchable material: pinned (and candidate) facts, episodes, transcript turns. */
export type MemoryKind = "fact" | "episode" | "transcript";
export const KINDS: readonly MemoryKind[] = ["fact", "episode", "transcript"];

/** Where a turn came from: direct chat (agent runs, X-Svc-Agent-Id), POST /memory/ingest, or
 * delegated work (tasks), which has its own sessions and never flushes the direct-chat one. */
export type TurnSource = "chat" | "ingest" | "delegated";

export interface Turn {
  user: string;
  assistant: string;
}

export interface SignalRow {
  id: number;
  agent: string;
  conversationId: string;
  source: TurnSource;
  userText: string;
  assistantText: string;
  sessionDate: string | null;
  project: string | null;
  attempts: number;
  createdAt: number;
}

/** What one extraction call yields (the JSON the extraction model must produce). */
export interface Extraction {
  episode: { summary: string; topics: string[]; decisions: string[]; action_items: string[]; salience: number };
  entities: Array<{ name: string; type?: string; description?: string }>;
  identity: Array<{ key: string; value: string }>;
  facts: string[];
}

export interface Hit {
  kind: MemoryKind;
  id: number;
  text: string;
  score: number;
  /** lexical part (0..1) and vector part (0..1, null without embeddings) */
  lexical: number;
  vector: number | null;
  salience: number | null;
  status?: string;
  conversationId?: string;
  createdAt: number;
}

/** The outcome of one ingest call or one buffered turn: never a silent ok. */
export type Outcome = "buffered" | "distilled" | `skipped:${string}` | `failed:${string}`;

export interface RunRecord {
  id: string;
  agent: string | null;
  type: "distillation" | "consolidation" | "index";
  trigger: string;
  startedAt: number;
  finishedAt: number | null;
  result: Record<string, unknown>;
}

export interface DeadLetter {
  id: string;
  agent: string;
  conversationId: string;
  reason: string;
  attempts: number;
  signalIds: number[];
  createdAt: number;
  resolvedAt: number | null;
}
