// Continuous batching: every generating sequence of a context in one decode per step.
// node-llama-cpp's dispatch loop picks the next batch as soon as the last sampling of a step has
// resolved, and the sequence sampled last is still a few promise hops short of queueing its next
// token then: n generating sequences go out n-1 at a time (one always a step behind), so a step
// costs more decodes than needed. Holding the step for one event-loop turn when fewer sequences
// are queued than are generating lets every one of them join the next batch. The hook is the
// sequence's after-batch callback, which the loop awaits before it picks the next batch.
// The loop keeps the context lock while decodes are queued, so the hold is off while a leased
// sequence sits out (erasing its old tokens for a new prompt waits for that lock): then the loop
// runs as it does without the hold.
import type { LlamaContext, LlamaContextSequence } from "node-llama-cpp";

type AfterBatch = (sequenceStateLength: number) => unknown;
interface SequenceInternals { _takeIntervalCheckpointIfNeededAfterBatch?: AfterBatch }
interface ContextInternals { _queuedDecodeSequenceIds?: { size: number } }

export class StepBatching {
  private step = 0;
  /** set from a step's first after-batch callback until the turn after it (or after its hold) */
  private open = false;
  private held?: Promise<void>;
  private readonly lastStep = new Map<LlamaContextSequence, number>();
  /** steps held for a sequence one hop behind (stats, tests) */
  heldSteps = 0;

  /** `generating`: sequences leased now */
  constructor(private readonly context: LlamaContext, private readonly generating: () => number) {}

  /** Installs the hold on one sequence; false when this node-llama-cpp has no such hook (its
   * default dispatch then stays). */
  attach(sequence: LlamaContextSequence): boolean {
    const s = sequence as unknown as SequenceInternals;
    const after = s._takeIntervalCheckpointIfNeededAfterBatch;
    if (typeof after !== "function") return false;
    s._takeIntervalCheckpointIfNeededAfterBatch = (n) => {
      const r = after(n);
      const wait = this.decoded(sequence);
      return wait ? wait.then(() => r) : r;
    };
    return true;
  }

  private decoded(sequence: LlamaContextSequence): Promise<void> | undefined {
    if (this.open) {
      this.lastStep.set(sequence, this.step);
      return this.held;
    }
    this.open = true;
    const step = ++this.step;
    this.lastStep.set(sequence, step);
    const close = () => setImmediate(() => { this.open = false; this.held = undefined; });
    if (!this.shouldHold(step)) {
      close(); // the rest of this step's callbacks run in microtasks, before that turn
      return undefined;
    }
    this.heldSteps++;
    this.held = new Promise<void>((resolve) => setImmediate(() => { resolve(); close(); }));
    return this.held;
  }

  /** Some leased sequence has not queued yet, and every leased one took part in the last two
   * steps (a sequence one step behind shows in one of them). */
  private shouldHold(step: number): boolean {
    const queued = (this.context as unknown as ContextInternals)._queuedDecodeSequenceIds?.size;
    const generating = this.generating();
    if (queued === undefined || generating < 2 || queued >= generating) return false;
    let inCycle = 0;
    for (const last of this.lastStep.values()) if (last >= step - 2) inCycle++;
    return inCycle >= generating;
  }
}
