// The spans one keyed chat request makes (server, chat with the GenAI and svc.* attributes,
// upstream client), made and ended with svc's own span helpers: what `npm run bench -- tracing`
// times and bench/dev/tracing-{alloc,garbage}.ts measure. The helpers are passed in, because the
// bench loads them from dist/ and the dev tools from the sources.
export interface SpanHelpers {
  tracing: { spans?: any };
  chatSpan: (...a: any[]) => any;
  attemptSpan: (...a: any[]) => void;
  endCallSpan: (...a: any[]) => void;
  upstreamSpan: (...a: any[]) => any;
  endUpstream: (...a: any[]) => void;
}

const key = { id: "key_0123456789", spec: { organization_id: "org-bench", team_id: "team-bench", user_id: "u1", budget_limits: { daily: 1 } } };
const req = { model: "bench-model", messages: [{ role: "user", content: "Say hello." }], maxTokens: 16, sampling: {}, stream: false };
const headers = { host: "127.0.0.1", authorization: "Bearer x", "content-type": "application/json", "user-agent": "autocannon" };

/** One request's spans, request number `i`; nothing when tracing is off. */
export function requestSpans(h: SpanHelpers): (i: number) => void {
  return (i) => {
    const sp = h.tracing.spans;
    if (!sp) return;
    const server = sp.server("POST", "/v1/chat/completions", headers, { "url.scheme": "http", "client.address": "127.0.0.1", "user_agent.original": "autocannon", "svc.request.id": `req_${i}` });
    const chat = h.chatSpan(server, { requestId: `req_${i}` }, req);
    h.attemptSpan(chat, { type: "openai", provider: "standin", upstreamModel: "bench-model" }, 0);
    const up = h.upstreamSpan(chat, "standin", "http://127.0.0.1:4321/v1", "/chat/completions");
    h.endUpstream(up, 200);
    h.endCallSpan({ key, call: { action: "chat:completions", audit: "chat", model: "bench-model", provider: "standin" }, adm: {}, span: chat }, { status: "success", provider: "standin", promptTokens: 10, completionTokens: 5, usdMicros: 12, finishReason: "stop" }, 12);
    sp.endServer(server, "POST", 200, "/v1/chat/completions", false);
  };
}
