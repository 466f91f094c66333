// The memory engine of one running svc (boot/start.ts creates it). See README.md for decisions.
export { MemoryEngine, createMemory, type TurnRecord, type IngestResult } from "./engine";
export { ManualClock, systemClock, type Clock } from "./clock";
export type { Hit, MemoryKind, Outcome } from "./types";
export { KINDS } from "./types";
