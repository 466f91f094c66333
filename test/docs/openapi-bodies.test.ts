// One source for request bodies: every route the OpenAPI document shows with a JSON body validates
// that body with the very schema object the document shows (compared by identity, not by shape),
// and a body the schema refuses gets 400 invalid_request naming the field.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { routeDocs } from "../../api/openapi/catalogue";
import "../../api/routes"; // loads every route module: each registers its body schema
import { bodySchemaOf, registeredBodies } from "../../api/body-schema";
import { startTestSvc, type TestSvc } from "../helpers/svc";

const withBody = routeDocs.filter((d) => d.body);

describe("request bodies: the document's schema is the route's", () => {
  it("every documented body is the one its route validates with", () => {
    const wrong = withBody.filter((d) => bodySchemaOf(d.method, d.path) !== d.body).map((d) => `${d.method.toUpperCase()} ${d.path}`);
    expect(wrong, "routes that validate with another schema (or none): use jsonBody() with the catalogue's schema").toEqual([]);
  });

  it("every route that validates a body documents that body", () => {
    const documented = new Set(withBody.map((d) => `${d.method.toUpperCase()} ${d.path}`));
    expect(registeredBodies().filter((k) => !documented.has(k))).toEqual([]);
  });
});

describe("a body the schema refuses is a 400 naming the field", () => {
  let s: TestSvc;
  beforeAll(async () => {
    s = await startTestSvc();
  });
  afterAll(async () => {
    await s?.stop();
  });
  const post = async (p: string, body: unknown) => {
    const res = await fetch(`${s.url}${p}`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
    return { status: res.status, json: (await res.json()) as any };
  };

  const cases: Array<[string, unknown, string, RegExp]> = [
    ["/memory/ingest", { agent_id: "a", conversation_id: "c", turns: [{ user: "u", assistant: 7 }] }, "turns[0]", /turns\[0\] must be \{user: string, assistant: string\}/],
    ["/memory/flush", { agent_id: "a", conversation_id: 5 }, "conversation_id", /conversation_id must be a string/],
    ["/admin/config/plan", { documents: [], waitTimeoutSeconds: 0 }, "waitTimeoutSeconds", /between 0 and 3600/],
    ["/admin/config/apply", { documents: [], prune: "yes" }, "prune", /prune must be true or false/],
    ["/mcp/call", { name: "" }, "name", /tool name/],
    ["/secure/session", { client_epk: "x", client_nonce: "short" }, "client_nonce", /16 to 200/],
    ["/pair/hello", {}, "request_id", /request_id \(from POST \/pair\) is required/],
    ["/pair/code", { scopes: ["root"] }, "scopes", /scopes must be a list of: inference/],
  ];
  // the protocol routes: OpenAI's error shape names the field; Anthropic's and Ollama's carry the text
  const hi = [{ role: "user", content: "hi" }];
  cases.push(
    ["/v1/chat/completions", { model: "m", messages: hi, temperature: 3 }, "temperature", /'temperature' must be between 0 and 2, got 3/],
    ["/v1/chat/completions", { model: "m", messages: [{ role: "robot", content: "x" }] }, "messages[0].role", /must be one of system, developer, user, assistant, tool/],
    ["/v1/completions", { model: "m", prompt: ["a", "b"] }, "prompt", /exactly one string/],
    ["/v1/responses", { model: "m", input: "x", max_output_tokens: 0 }, "max_output_tokens", /must be at least 1, got 0/],
    ["/v1/embeddings", { model: "m", input: ["ok", 1] }, "input[1]", /token arrays are not supported/],
  );
  const otherShapes: Array<[string, unknown, RegExp]> = [
    ["/v1/messages", { model: "m", messages: hi }, /'max_tokens' is required/],
    ["/v1/messages/count_tokens", { model: "m", messages: [] }, /'messages' must be a non-empty array/],
    ["/api/chat", { model: "m", messages: hi, options: { temperature: 5 } }, /'options.temperature' must be between 0 and 2, got 5/],
    ["/api/generate", { model: "m", keep_alive: [] }, /'keep_alive' must be a duration/],
    ["/api/embed", { model: "m", input: [] }, /'input' must be a string or a non-empty array of strings/],
    ["/api/embeddings", { model: "m" }, /'prompt' is required/],
  ];
  for (const [p, body, message] of otherShapes) {
    it(`POST ${p}`, async () => {
      const r = await post(p, body);
      expect(r.status, JSON.stringify(r.json)).toBe(400);
      expect(JSON.stringify(r.json)).toMatch(message);
    });
  }

  it("null stands for an absent optional field, as the SDKs send it", async () => {
    const r = await post("/v1/chat/completions", { model: "no-such-model", messages: hi, temperature: null, stop: null, max_tokens: null, tools: null, user: null });
    expect(r.json.error).toMatchObject({ code: "model_not_found" }); // past the schema: the model is looked up
  });

  for (const [p, body, param, message] of cases) {
    it(`POST ${p}`, async () => {
      const r = await post(p, body);
      expect(r.status, JSON.stringify(r.json)).toBe(400);
      expect(r.json.error).toMatchObject({ code: "invalid_request", param });
      expect(r.json.error.message).toMatch(message);
    });
  }
});
