// Drops the cached tokens a leased sequence holds past its new prompt's shared prefix, without the
// context lock. node-llama-cpp erases them under that lock, and its dispatch loop keeps the lock
// while any decode is queued: a request landing on a sequence that holds another prompt's tokens
// would wait until every other generation on the context has finished. Removing a sequence's KV
// cells is safe whenever no decode is running, so the trim runs at once, or as soon as the running
// decode settles (before the loop can start the next one). The shared prefix stays cached.
import type { LlamaContext, LlamaContextSequence, Token } from "node-llama-cpp";

interface NativeContext {
  decodeBatch(): Promise<void>;
  removeTokenCellsFromSequence(sequenceId: number, start: number, end: number): boolean;
  disposeSequence(sequenceId: number): void;
  getSequenceKvCacheMinPosition(sequenceId: number): number;
}
interface SequenceInternals {
  _sequenceId?: number;
  _contextTokens?: Token[];
  _nextTokenIndex?: number;
  _loadedTokenPredictions?: unknown[];
  _checkpoints?: { pruneFromEndToIndex?: (index: number) => void };
}

export class StaleTrim {
  private readonly native?: NativeContext;
  private decoding = false;
  private pending: (() => void)[] = [];
  /** trims done before the sequence's generation started (stats, tests) */
  trims = 0;

  constructor(context: LlamaContext) {
    const native = (context as unknown as { _ctx?: NativeContext })._ctx;
    if (!native || typeof native.decodeBatch !== "function" || typeof native.removeTokenCellsFromSequence !== "function") return;
    const decode = native.decodeBatch;
    const settled = () => {
      this.decoding = false;
      this.runPending();
    };
    // the addon's method is read-only on its prototype: an own property on the instance shadows it
    Object.defineProperty(native, "decodeBatch", {
      configurable: true,
      writable: true,
      value: () => {
        this.decoding = true;
        const p = decode.call(native);
        p.then(settled, settled); // registered before the loop's own await resumes
        return p;
      },
    });
    this.native = native;
  }

  /** Leaves `sequence` holding only the tokens it shares with `tokens` (but at most all but the last
   * prompt token, which the generators decode themselves). No-op when node-llama-cpp's internals
   * differ from 3.x's: the library then erases under its lock as before. */
  async trim(sequence: LlamaContextSequence, tokens: readonly Token[]): Promise<void> {
    const s = sequence as unknown as SequenceInternals;
    if (!this.native || !Array.isArray(s._contextTokens) || typeof s._nextTokenIndex !== "number" || typeof s._sequenceId !== "number") return;
    if (s._loadedTokenPredictions?.length) return;
    const start = () => Math.min(sequence.compareContextTokens(tokens as Token[]).firstDifferentIndex, tokens.length - 1);
    const now = start();
    if (now >= s._nextTokenIndex) return;
    if (!this.decoding) return this.trimNow(s, now);
    // recomputed when the running decode settles: the sequence may have moved on meanwhile
    await new Promise<void>((resolve) => this.pending.push(() => { this.trimNow(s, start()); resolve(); }));
  }

  private runPending(): void {
    for (const run of this.pending.splice(0)) run();
  }

  private trimNow(s: SequenceInternals, start: number): void {
    const native = this.native!;
    const id = s._sequenceId!;
    const end = s._nextTokenIndex!;
    if (start >= end) return;
    this.trims++;
    const minPos = Math.max(0, native.getSequenceKvCacheMinPosition(id));
    if (start > minPos && native.removeTokenCellsFromSequence(id, start, end)) {
      s._contextTokens!.splice(start);
      s._nextTokenIndex = start;
    } else {
      // the cells cannot be cut (as in the library's own erase): start the sequence over
      native.disposeSequence(id);
      s._contextTokens = [];
      s._nextTokenIndex = 0;
    }
    s._checkpoints?.pruneFromEndToIndex?.(s._contextTokens!.length - 1);
  }
}
