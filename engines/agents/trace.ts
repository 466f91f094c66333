// An agent's spans while tracing is on (engines/telemetry; docs/observability.md): `invoke_agent`
// for a run or each stretch of a task's run (dispatch, and again after a clarification), with the
// model calls, `execute_tool` and memory spans under it. A task keeps its trace as a W3C
// traceparent in its row, so whichever replica does something for it (the runner, the replica a
// clarification reached) adds to the same trace.
import { tracing, type Attrs, type Span } from "../telemetry";

/** The traceparent a task keeps: that of the request that dispatched it. */
export function taskTrace(parent: Span | undefined): string | undefined {
  return parent && tracing.spans ? tracing.spans.headers(parent).traceparent : undefined;
}

export function invokeSpan(parent: Span | string, agent: string, model: string, taskId?: string): Span | undefined {
  return tracing.spans?.child(parent, `invoke_agent ${agent}`, "internal", {
    "gen_ai.operation.name": "invoke_agent",
    "gen_ai.agent.name": agent,
    "gen_ai.request.model": model,
    "svc.task.id": taskId,
  });
}

/** A span under `parent` for work done around the loop (memory recall and writes, an answer). */
export function stepSpan(parent: Span | string, name: string, attrs: Attrs = {}): Span | undefined {
  return tracing.spans?.child(parent, name, "internal", attrs);
}

export function toolSpan(parent: Span, tool: string, callId: string): Span | undefined {
  return tracing.spans?.child(parent, `execute_tool ${tool}`, "internal", { "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": tool, "gen_ai.tool.call.id": callId });
}

export function endSpan(span: Span | undefined, attrs?: Attrs, error?: unknown): void {
  if (!span) return;
  const sp = tracing.spans;
  if (sp) sp.end(span, attrs, error);
  else span.end(); // tracing stopped meanwhile
}

/** Run `f` inside a span under `parent` (none: just run it); `f` gets the span, for its children. */
export async function traced<T>(parent: Span | undefined, name: string, attrs: Attrs, f: (span?: Span) => Promise<T>): Promise<T> {
  const span = parent ? stepSpan(parent, name, attrs) : undefined;
  if (!span) return f();
  try {
    const r = await f(span);
    endSpan(span);
    return r;
  } catch (e) {
    endSpan(span, undefined, e);
    throw e;
  }
}
