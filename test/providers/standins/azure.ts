// Azure OpenAI stand-in: POST /openai/deployments/{deployment}/chat/completions?api-version=…
// Checks what Azure checks: a known deployment (404 DeploymentNotFound), a supported api-version
// (404 "Resource not found" when absent, 400 when unsupported), and the `api-key` header or an
// Entra ID bearer token (401 with Azure's wording). Answers in OpenAI's chat completion shapes,
// SSE streaming with the usage chunk when stream_options.include_usage is set.
import { COMPLETION_TOKENS, PROMPT_TOKENS, TOOL_ARGS, decide, json, loopback, openAIText, pieces } from "./common";

export const AZURE_API_VERSIONS = ["2024-06-01", "2024-10-21", "2025-01-01-preview"];

export async function azureStandIn(o: { apiKey: string; entraToken?: string; deployments: string[] }) {
  return loopback((req, res, rec) => {
    const u = new URL(rec.url, "http://x");
    const m = /^\/openai\/deployments\/([^/]+)\/chat\/completions$/.exec(u.pathname);
    const version = u.searchParams.get("api-version");
    if (!m || !version) return json(res, 404, { error: { code: "404", message: "Resource not found" } });
    if (!AZURE_API_VERSIONS.includes(version)) return json(res, 400, { error: { code: "BadRequest", message: `API version not supported` } });
    const bearer = /^Bearer (.+)$/.exec(String(rec.headers.authorization ?? ""))?.[1];
    const keyOk = rec.headers["api-key"] === o.apiKey || (o.entraToken !== undefined && bearer === o.entraToken);
    if (!keyOk) {
      return json(res, 401, { error: { code: "401", message: "Access denied due to invalid subscription key or wrong API endpoint. Make sure to provide a valid key for an active subscription and use a correct regional API endpoint for your resource." } });
    }
    const deployment = decodeURIComponent(m[1]);
    if (!o.deployments.includes(deployment)) {
      return json(res, 404, { error: { code: "DeploymentNotFound", message: "The API deployment for this resource does not exist. If you created the deployment within the last 5 minutes, please wait a moment and try again." } });
    }
    const b = rec.body ?? {};
    const last = [...(b.messages ?? [])].reverse().find((x: any) => x.role === "user");
    const text = openAIText(last?.content);
    // Azure's vision input: image_url parts with an http(s) or base64 data URL
    for (const part of Array.isArray(last?.content) ? last.content : []) {
      if (part?.type === "image_url" && !/^(https?:|data:image\/(png|jpeg|gif|webp);base64,)/.test(String(part.image_url?.url ?? ""))) {
        return json(res, 400, { error: { code: "BadRequest", message: "Invalid image URL. The URL must be a valid HTTP or HTTPS URL, or a data URL with base64 encoding." } });
      }
    }
    // as OpenAI's Chat Completions: a tool message's content is a string or text parts, and tool
    // messages follow the assistant message whose tool_calls they answer
    const msgs: any[] = Array.isArray(b.messages) ? b.messages : [];
    for (const [i, x] of msgs.entries()) {
      if (x?.role !== "tool") continue;
      if (Array.isArray(x.content) && x.content.some((p: any) => p?.type !== "text")) {
        return json(res, 400, { error: { code: "BadRequest", message: `Invalid value: '${x.content.find((p: any) => p?.type !== "text")?.type}'. Supported values are: 'text'.`, param: `messages[${i}].content` } });
      }
      const before = msgs.slice(0, i).reverse().find((y: any) => y?.role !== "tool");
      if (!before?.tool_calls?.length) {
        return json(res, 400, { error: { code: "BadRequest", message: "Invalid parameter: messages with role 'tool' must be a response to a preceding message with 'tool_calls'.", param: `messages[${i}].role` } });
      }
    }
    const tc = b.tool_choice;
    const forced = tc === "required" ? b.tools?.[0]?.function?.name : tc?.function?.name;
    const d = decide(text, tc === "none" ? undefined : forced, tc === "none" ? [] : (b.tools ?? []).map((x: any) => x.function?.name));
    const model = `gpt-4o-2024-08-06`;
    const usage = { prompt_tokens: PROMPT_TOKENS, completion_tokens: COMPLETION_TOKENS, total_tokens: PROMPT_TOKENS + COMPLETION_TOKENS };
    const call = "tool" in d ? { id: "call_azure_1", type: "function", function: { name: d.tool, arguments: JSON.stringify(TOOL_ARGS) } } : undefined;
    const finish = call ? "tool_calls" : "stop";
    if (!b.stream) {
      const message = call ? { role: "assistant", content: null, tool_calls: [call] } : { role: "assistant", content: (d as { text: string }).text };
      return json(res, 200, { id: "chatcmpl-azure", object: "chat.completion", created: 1, model, choices: [{ index: 0, message, finish_reason: finish }], usage });
    }
    res.writeHead(200, { "content-type": "text/event-stream" });
    const base = { id: "chatcmpl-azure", object: "chat.completion.chunk", created: 1, model };
    const send = (o: unknown) => res.write(`data: ${JSON.stringify(o)}\n\n`);
    // Azure sends a first chunk with no choices (prompt filter results)
    send({ ...base, choices: [], prompt_filter_results: [{ prompt_index: 0, content_filter_results: {} }] });
    if (call) {
      send({ ...base, choices: [{ index: 0, delta: { role: "assistant", tool_calls: [{ index: 0, id: call.id, type: "function", function: { name: call.function.name, arguments: "" } }] }, finish_reason: null }] });
      for (const p of pieces(call.function.arguments.replace(":", ": "))) send({ ...base, choices: [{ index: 0, delta: { tool_calls: [{ index: 0, function: { arguments: p } }] }, finish_reason: null }] });
    } else {
      for (const p of pieces((d as { text: string }).text)) send({ ...base, choices: [{ index: 0, delta: { content: p }, finish_reason: null }] });
    }
    send({ ...base, choices: [{ index: 0, delta: {}, finish_reason: finish }] });
    if (b.stream_options?.include_usage) send({ ...base, choices: [], usage });
    res.end("data: [DONE]\n\n");
  });
}
