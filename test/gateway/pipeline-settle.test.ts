// A non-streaming answer's settlement can wait until the answer is sent (engines/gateway/
// pipeline-settle.ts): held, it runs once in afterAnswer(); not held, as the events end, as before.
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
  it("settles as the events end when nothing holds it", () => {
    const { t, settled } = tracked();
    expect(collectSync(t).text).toBe("hello");
    expect(settled).toEqual([{ tally: { usage: { promptTokens: 3, completionTokens: 1 }, chars: 5, finish: "stop" }, failure: undefined }]);
    t.afterAnswer(); // nothing held: no second settlement
    expect(settled).toHaveLength(1);
  });

  it("held, settles once in afterAnswer with what went through", () => {
    const { t, settled } = tracked();
    const after = t.hold();
    expect(collectSync(t).text).toBe("hello");
    expect(settled).toHaveLength(0);
    after.afterAnswer();
    after.afterAnswer();
    expect(settled).toHaveLength(1);
    expect(settled[0].tally.chars).toBe(5);
  });

  it("held, a failure mid-way is settled with the failure", () => {
    const boom = new Error("upstream broke");
    function* failing(): Generator<ChatEvent> {
      yield { type: "text", text: "par" };
      throw boom;
    }
    const { t, settled } = tracked(failing());
    const after = t.hold();
    expect(() => collectSync(t)).toThrow(boom);
    after.afterAnswer();
    expect(settled).toEqual([{ tally: { usage: undefined, chars: 3, finish: undefined }, failure: boom }]);
  });

  it("held but never read, afterAnswer settles nothing", () => {
    const { t, settled } = tracked();
    t.hold().afterAnswer();
    expect(settled).toHaveLength(0);
  });
});
