// A non-streaming answer's events as the pipeline tracks them (engines/gateway/pipeline-settle.ts):
// settled exactly once, as the events end, with what went through, before the route answers.
import { describe, it, expect } from "vitest";
import { TrackedSync } from "../../engines/gateway/pipeline-settle";
import { collectSync } from "../../engines/chat/collect";
import type { ChatEvent } from "../../engines/chat/types";
import type { Tally } from "../../engines/gateway/pipeline-records";

const EVENTS: ChatEvent[] = [
  { type: "text", text: "hello" },
  { type: "done", finishReason: "stop", usage: { promptTokens: 3, completionTokens: 1 } },
];
const tally = (): Tally => ({ usage: undefined, chars: 0, finish: undefined });

function tracked(events: Iterable<ChatEvent> = EVENTS) {
  const settled: { tally: Tally; failure: unknown }[] = [];
  const t = new TrackedSync(events, undefined, "run", tally(), (_run, tl, failure) => settled.push({ tally: tl, failure }));
  return { t, settled };
}

describe("TrackedSync", () => {
  it("settles once, as the events end, with what went through", () => {
    const { t, settled } = tracked();
    expect(collectSync(t).text).toBe("hello");
    expect(settled).toEqual([{ tally: { usage: { promptTokens: 3, completionTokens: 1 }, chars: 5, finish: "stop" }, failure: undefined }]);
  });

  it("a failure mid-way is settled with the failure", () => {
    const boom = new Error("upstream broke");
    function* failing(): Generator<ChatEvent> {
      yield { type: "text", text: "par" };
      throw boom;
    }
    const { t, settled } = tracked(failing());
    expect(() => collectSync(t)).toThrow(boom);
    expect(settled).toEqual([{ tally: { usage: undefined, chars: 3, finish: undefined }, failure: boom }]);
  });

  it("never read, settles nothing", () => {
    const { settled } = tracked();
    expect(settled).toHaveLength(0);
  });
});
