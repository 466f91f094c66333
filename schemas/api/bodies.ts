// JSON Schemas (TypeBox) of the HTTP API's request bodies that are not manifest kinds or key
// bodies: the OpenAPI document shows them and the routes validate with them (api/body-schema.ts),
// so the two cannot disagree. What a schema cannot say (cross-field rules, lookups) the routes
// check after it. `errorMessage` on a node is the text of a problem anywhere inside it, reported
// at that node (`{field}` is its path).
import { Type, type TProperties } from "@sinclair/typebox";

const open = <P extends TProperties>(props: P, description?: string) => Type.Object(props, { additionalProperties: true, ...(description ? { description } : {}) });

export * from "./protocols";

/** A string field that may also be null (taken as absent), at most `max` characters. */
const text = (max: number, more: Record<string, unknown> = {}) =>
  Type.Optional(Type.Union([Type.String({ maxLength: max }), Type.Null()], { errorMessage: { default: "{field} must be a string", maxLength: `{field} is longer than ${max} characters` }, ...more }));
const flag = Type.Optional(Type.Union([Type.Boolean(), Type.Null()], { errorMessage: "{field} must be a boolean" }));
const MAX_PROMPT = 1_000_000;

/** How an agent may pick tools: auto | none | required, or one tool by name. */
const AgentToolChoice = Type.Optional(
  Type.Union(
    [
      Type.Null(),
      Type.Union([Type.Literal("auto"), Type.Literal("none"), Type.Literal("required")]),
      Type.Object({ function: Type.Object({ name: Type.String({ minLength: 1 }) }) }),
      Type.Object({ name: Type.String({ minLength: 1 }) }),
    ],
    { errorMessage: 'tool_choice must be "auto", "none", "required" or {"type": "function", "function": {"name": "<tool>"}}' },
  ),
);
const AgentMessage = Type.Object(
  { role: Type.Union([Type.Literal("user"), Type.Literal("assistant")]), content: Type.String() },
  { errorMessage: '{field} must be {role: "user" | "assistant", content: string}' },
);

export const AgentRunBody = open(
  {
    prompt: text(MAX_PROMPT),
    input: text(MAX_PROMPT, { description: "the same as prompt" }),
    messages: Type.Optional(Type.Array(AgentMessage, { errorMessage: "messages must be an array of {role, content}" })),
    model: text(500),
    tool_choice: AgentToolChoice,
    stream: Type.Optional(Type.Boolean({ errorMessage: "stream must be a boolean" })),
    conversation_id: text(200),
  },
  "agent input: prompt, input, or messages ending with a user message",
);
export const DispatchBody = open(
  { prompt: Type.String({ minLength: 1, maxLength: MAX_PROMPT, errorMessage: { default: "prompt (a non-empty string) is required", maxLength: `prompt is longer than ${MAX_PROMPT} characters` } }), title: text(500), model: text(500), tool_choice: AgentToolChoice },
  "detached task",
);
export const ClarifyBody = open({ response: text(MAX_PROMPT, { description: "an answer, or approve | deny for an approval" }), approve: Type.Optional(Type.Unknown({ description: "true or false; other values are ignored" })) }, "response or approve is required");
export const ToolCallBody = Type.Object({
  name: Type.String({ minLength: 1, description: "a tool name from GET /mcp/tools", errorMessage: "name must be a tool name from GET /mcp/tools" }),
  arguments: Type.Optional(Type.Union([Type.Record(Type.String(), Type.Unknown()), Type.Null()], { errorMessage: "arguments must be an object" })),
});

const MAX_TURNS = 1000;
const required = (max: number) => Type.String({ minLength: 1, maxLength: max, pattern: "\\S", errorMessage: { required: "{field} (a non-empty string) is required", default: "{field} must be a non-empty string", maxLength: `{field} is longer than ${max} characters` } });
export const MemoryIngestBody = open({
  agent_id: required(200),
  conversation_id: required(200),
  turns: Type.Array(
    Type.Object({ user: Type.String(), assistant: Type.String() }, { errorMessage: "{field} must be {user: string, assistant: string}" }),
    { minItems: 1, maxItems: MAX_TURNS, errorMessage: { default: "turns must be a non-empty array of {user, assistant}", maxItems: `turns holds more than ${MAX_TURNS} items` } },
  ),
  session_date: text(100, { description: "ISO 8601 date or date-time" }),
  skip_extraction: flag,
  project: text(200),
  flush: flag,
});
export const MemoryFlushBody = open({ agent_id: required(200), conversation_id: text(200) });
export const AgentOnlyBody = open({ agent_id: Type.Optional(required(200)) });

const bool = (name: string) => Type.Optional(Type.Boolean({ errorMessage: `${name} must be true or false` }));
export const ConfigBody = open(
  {
    document: Type.Optional(Type.String({ description: "YAML, one or more documents", errorMessage: '"document" must be a string of YAML' })),
    documents: Type.Optional(Type.Array(Type.Unknown(), { errorMessage: '"documents" must be a list of objects' })),
    plan: Type.Optional(Type.Object({}, { additionalProperties: true, description: "a saved plan (from POST /admin/config/plan)", errorMessage: '"plan" must be a saved plan object' })),
    source: Type.Optional(Type.Union([Type.String({ minLength: 1, maxLength: 512, pattern: "^[^\\u0000-\\u001f]*$" }), Type.Null()], { errorMessage: "source must be a non-empty string of at most 512 printable characters" })),
    prune: bool("prune"),
    allowPruneAll: bool("allowPruneAll"),
    confirm: bool("confirm"),
    wait: bool("wait"),
    waitTimeoutSeconds: Type.Optional(Type.Number({ exclusiveMinimum: 0, maximum: 3600, errorMessage: "waitTimeoutSeconds must be between 0 and 3600" })),
    replay: Type.Optional(Type.String({ maxLength: 64, description: "plan: replay the audit entries of this window (24h, 7d) through the proposed state (docs/replay.md)", errorMessage: 'replay must be a duration such as "24h"' })),
    from: Type.Optional(Type.String({ maxLength: 64, description: "plan: the replay window's start (UTC)", errorMessage: "from must be a UTC time" })),
    to: Type.Optional(Type.String({ maxLength: 64, description: "plan: the replay window's end (UTC)", errorMessage: "to must be a UTC time" })),
  },
  'exactly one of "document", "documents" or "plan", with plan/apply options',
);
