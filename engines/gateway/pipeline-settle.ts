// A non-streaming answer's events as the pipeline tracks them: each event counted into the tally,
// and the run settled (limits with the real usage, audit row, roll-ups, metrics, alerts) when the
// events end, fail or are left, before the route sends the answer. Settling after the answer was
// tried and taken back: the audit row's write-ahead (in shared mode a journal line) must be
// written before the client can see the answer, or a kill -9 between the two loses the row of an
// answered request (test/scale/audit-crash.test.ts). One class with the settlement bound once
// replaces a generator and its closure a request.
import type { ChatEvent } from "../chat/types";
import type { SyncEvents, UpstreamAnswer } from "../chat/collect";
import { count, type Tally } from "./pipeline-records";

/** The pipeline's settlement of one run (GatewayPipeline.finish, bound once). */
export type SettleRun<R> = (run: R, tally: Tally, failure: unknown) => void;

export class TrackedSync<R> implements SyncEvents {
  readonly sync: Iterable<ChatEvent>;
  readonly upstream?: UpstreamAnswer;

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

  private *counted(): Generator<ChatEvent> {
    const tally = this.tally;
    let failure: unknown;
    try {
      for (const ev of this.events) {
        count(tally, ev);
        yield ev;
      }
    } catch (e) {
      failure = e;
      throw e;
    } finally {
      // on completion, error or early exit, as the streaming path settles
      this.settleRun(this.run, tally, failure);
    }
  }

  [Symbol.asyncIterator](): AsyncIterator<ChatEvent> {
    return asAsync(this.sync);
  }
}

async function* asAsync(events: Iterable<ChatEvent>): AsyncGenerator<ChatEvent> {
  yield* events;
}
