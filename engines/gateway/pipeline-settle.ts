// A non-streaming answer's events as the pipeline tracks them, with its settlement (limits
// settled, audit row, roll-ups, metrics, alerts) able to wait until the answer has been sent.
// At one connection every microsecond between the upstream's answer and svc's is added latency,
// and no guarantee needs the settlement first: the write-ahead reservation is written before the
// answer (pipeline.ts), so a crash in between loses nothing the journal does not recover. The
// route holds it (hold()) and the listener runs it right after end(), in the same turn, so the
// next request on any connection sees the settled state.
import type { ChatEvent } from "../chat/types";
import type { AfterAnswer, SyncEvents, UpstreamAnswer } from "../chat/collect";
import { count, type Tally } from "./pipeline-records";

/** The pipeline's settlement of one run (GatewayPipeline.finish, bound once). */
export type SettleRun<R> = (run: R, tally: Tally, failure: unknown) => void;

export class TrackedSync<R> implements SyncEvents, AfterAnswer {
  readonly sync: Iterable<ChatEvent>;
  readonly upstream?: UpstreamAnswer;
  private held = false;
  private failure: unknown = undefined;
  private ended = false;

  constructor(
    private readonly events: Iterable<ChatEvent>,
    upstream: UpstreamAnswer | undefined,
    private readonly run: R,
    private readonly tally: Tally,
    private readonly settleRun: SettleRun<R>,
  ) {
    if (upstream !== undefined) this.upstream = upstream;
    this.sync = this.counted();
  }

  /** Settle in afterAnswer() instead of as the events end (the route sends the answer between). */
  hold(): AfterAnswer {
    this.held = true;
    return this;
  }

  /** Runs a held settlement once the events have ended (a no-op otherwise, or the second time). */
  afterAnswer(): void {
    if (!this.ended) return;
    this.ended = false;
    this.settleRun(this.run, this.tally, this.failure);
  }

  private *counted(): Generator<ChatEvent> {
    const tally = this.tally;
    try {
      for (const ev of this.events) {
        count(tally, ev);
        yield ev;
      }
    } catch (e) {
      this.failure = e;
      throw e;
    } finally {
      // on completion, error or early exit, as the streaming path settles
      if (this.held) this.ended = true;
      else this.settleRun(this.run, tally, this.failure);
    }
  }

  [Symbol.asyncIterator](): AsyncIterator<ChatEvent> {
    return asAsync(this.sync);
  }
}

async function* asAsync(events: Iterable<ChatEvent>): AsyncGenerator<ChatEvent> {
  yield* events;
}
