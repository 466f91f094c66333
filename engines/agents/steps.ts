// Loop events as step-log entries and as a task's one-line "current step".
import type { LoopEvent } from "./types";
import { redactSecrets } from "../secrets/redact";

/** The step-log entry of an event (deltas and progress are not logged one by one). */
export function stepOf(ev: LoopEvent): Record<string, unknown> & { type: string } {
  switch (ev.type) {
    case "step":
      return { type: "step", iteration: ev.iteration, max_iterations: ev.maxIterations };
    case "text":
      return { type: "text", iteration: ev.iteration, text: clip(ev.text) };
    case "tool_call":
      return { type: "tool_call", call_id: ev.id, tool: ev.name, arguments: clip(ev.arguments), mode: ev.mode };
    case "tool_result":
      return { type: "tool_result", call_id: ev.id, tool: ev.name, outcome: ev.outcome, is_error: ev.isError, content: clip(ev.content) };
    case "input_required":
      return { type: "input_required", kind: ev.pending.kind, call_id: ev.pending.callId };
    default:
      return { type: ev.type };
  }
}

export function currentStepOf(ev: LoopEvent, prev: string | null): string | null {
  switch (ev.type) {
    case "step":
      return `calling the model (iteration ${ev.iteration} of ${ev.maxIterations})`;
    case "tool_call":
      return `running tool ${ev.name}`;
    case "tool_progress":
      return `running tool ${ev.name}: ${ev.progress}${ev.total !== undefined ? `/${ev.total}` : ""}${ev.message ? ` (${ev.message})` : ""}`;
    case "tool_result":
      return `tool ${ev.name} answered`;
    default:
      return prev;
  }
}

// step logs are records: outside text (tool output, model text) passes the redactor first
const clip = (s: string, n = 2000) => {
  const r = redactSecrets(s);
  return r.length > n ? r.slice(0, n) + "…" : r;
};
