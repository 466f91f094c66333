// Request bodies of the protocol routes (OpenAI, Anthropic, Ollama): the OpenAPI document shows
// them and the routes validate with them (api/body-schema.ts) before the protocol transforms in
// api/ map them. The schemas hold the types, required fields and ranges; message contents, tools,
// tool_choice and formats are the transforms' (their rules span fields). Every optional field
// may be null, taken as absent, as the SDKs and the transforms treat it. The texts are the ones
// the transforms used to give (`{field}` is the field's path, `{value}` what was sent).
import { Type, type TProperties, type TSchema } from "@sinclair/typebox";

/** Upper bound for any output-token limit: the largest context a Model manifest may declare. The
 * pool caps a request further by the loaded model's actual context. */
export const MAX_OUTPUT_TOKENS = 1_048_576;
export const MAX_STOP_SEQUENCES = 16;
export const MAX_EMBEDDING_INPUTS = 2048;

const open = <P extends TProperties>(props: P, description: string) => Type.Object(props, { additionalProperties: true, description });
/** optional, and null means absent */
const opt = <T extends TSchema>(s: T, errorMessage: string | Record<string, string>, description?: string) =>
  Type.Optional(Type.Union([s, Type.Null()], { errorMessage, ...(description ? { description } : {}) }));
const range = (min: number, max: number) => `'{field}' must be between ${min} and ${max}, got {value}`;
const num = (min: number, max: number) => opt(Type.Number({ minimum: min, maximum: max }), { default: "'{field}' must be a number", minimum: range(min, max), maximum: range(min, max) });
const int = (min: number, max: number) => opt(Type.Integer({ minimum: min, maximum: max }), { default: "'{field}' must be an integer", minimum: range(min, max), maximum: range(min, max) });
const maxTokens = (description?: string) =>
  opt(Type.Integer({ minimum: 1, maximum: MAX_OUTPUT_TOKENS }), { default: "'{field}' must be an integer", minimum: "'{field}' must be at least 1, got {value}", maximum: `'{field}' must be at most ${MAX_OUTPUT_TOKENS}, got {value}` }, description);
const bool = () => opt(Type.Boolean(), "'{field}' must be a boolean");
const str = (description?: string) => opt(Type.String(), "'{field}' must be a string", description);
const obj = (description?: string) => opt(Type.Object({}, { additionalProperties: true }), "'{field}' must be an object", description);
const stop = () =>
  opt(Type.Union([Type.String(), Type.Array(Type.String(), { maxItems: MAX_STOP_SEQUENCES })]), { default: "'{field}' must be a string or an array of strings", maxItems: `'{field}' may hold at most ${MAX_STOP_SEQUENCES} sequences` });
const seed = () => int(Number.MIN_SAFE_INTEGER, Number.MAX_SAFE_INTEGER);
const list = (description: string) => opt(Type.Array(Type.Unknown()), "'{field}' must be an array", description);
const model = (description = "a model id from GET /v1/models") => Type.String({ minLength: 1, description, errorMessage: "'{field}' is required and must be a non-empty string" });
const messages = <T extends TSchema>(item: T, minItems = 1) => Type.Array(item, { minItems, errorMessage: { type: "'{field}' must be a non-empty array", minItems: "'{field}' must be a non-empty array" } });
/** one string of `roles`: an enum, not a union of literals (ajv builds an error object for every
 * branch of a union tried before the match, on every request) */
const role = <R extends string>(roles: R[], errorMessage: string) => Type.Unsafe<R>({ type: "string", enum: roles, errorMessage });
const anything = (description: string) => Type.Optional(Type.Unknown({ description }));
const inputs = () =>
  Type.Union([Type.String(), Type.Array(Type.String({ errorMessage: "'{field}' must be a string (token arrays are not supported)" }), { minItems: 1, maxItems: MAX_EMBEDDING_INPUTS })], {
    errorMessage: { default: "'{field}' must be a string or a non-empty array of strings", maxItems: `'{field}' may hold at most ${MAX_EMBEDDING_INPUTS} items` },
  });

const Metadata = "free-form; workflow_id and user_id attribute usage; routing: {strategy, fallback}";
/** Sampling of the OpenAI routes; top_k, min_p, repeat_penalty are llama.cpp's extras. */
const OpenAISampling = {
  temperature: num(0, 2),
  top_p: num(0, 1),
  top_k: int(0, 1_000_000),
  min_p: num(0, 1),
  repeat_penalty: num(0, 10),
  seed: seed(),
  stop: stop(),
  frequency_penalty: num(-2, 2),
  presence_penalty: num(-2, 2),
};
/** The fields every OpenAI generation route reads alike. */
const OpenAICommon = {
  n: int(1, 128),
  stream: bool(),
  stream_options: opt(Type.Object({ include_usage: bool() }, { additionalProperties: true }), "'{field}' must be an object"),
  session_id: str("groups requests into one session"),
  metadata: obj(Metadata),
  user: str(),
};

const ChatMessage = Type.Object(
  {
    role: role(["system", "developer", "user", "assistant", "tool"], "'{field}' must be one of system, developer, user, assistant, tool"),
    content: Type.Optional(Type.Union([Type.String(), Type.Array(Type.Unknown()), Type.Null()], { errorMessage: "'{field}' must be a string or an array of content parts" })),
    name: str(),
  },
  { additionalProperties: true, errorMessage: { type: "'{field}' must be an object with role and content" } },
);

export const ChatCompletionBody = open(
  {
    model: model(),
    messages: messages(ChatMessage),
    max_tokens: maxTokens(),
    max_completion_tokens: maxTokens("preferred over max_tokens"),
    ...OpenAISampling,
    ...OpenAICommon,
    tools: list("function tools: {type: function, function: {name, description?, parameters?}}"),
    tool_choice: anything('"none" | "auto" | "required" | {type: "function", function: {name}}'),
    parallel_tool_calls: bool(),
    response_format: obj("{type: text | json_object | json_schema}"),
  },
  "OpenAI Chat Completions request",
);
export const CompletionBody = open(
  {
    model: model(),
    prompt: Type.Union([Type.String(), Type.Array(Type.String(), { minItems: 1, maxItems: 1 })], {
      errorMessage: { default: "'prompt' must be a string (or an array of exactly one string); batches and token arrays are not supported", required: "'prompt' is required and must be a string" },
    }),
    max_tokens: maxTokens(),
    echo: bool(),
    ...OpenAISampling,
    ...OpenAICommon,
  },
  "OpenAI text completions request",
);
export const ResponsesBody = open(
  {
    model: model(),
    input: Type.Union([Type.String(), Type.Array(Type.Unknown(), { minItems: 1 })], { errorMessage: "'input' must be a string or a non-empty array of input items" }),
    instructions: str(),
    max_output_tokens: maxTokens(),
    temperature: num(0, 2),
    top_p: num(0, 1),
    top_k: int(0, 1_000_000),
    seed: seed(),
    n: int(1, 128),
    stream: bool(),
    tools: list("function tools: {type: function, name, description?, parameters?}"),
    tool_choice: anything('"none" | "auto" | "required" | {type: "function", name}'),
    parallel_tool_calls: bool(),
    text: obj("{format: {type: text | json_object | json_schema}}"),
    session_id: str(),
    metadata: obj(Metadata),
    user: str(),
  },
  "OpenAI Responses request",
);
export const EmbeddingsBody = open(
  {
    model: model(),
    input: inputs(),
    encoding_format: opt(Type.Union([Type.Literal("float"), Type.Literal("base64")]), `'encoding_format' must be "float" or "base64"`),
  },
  "OpenAI embeddings request",
);

const AnthropicMessage = Type.Object(
  {
    role: role(["user", "assistant"], `'{field}' must be "user" or "assistant"`),
    content: Type.Union([Type.String(), Type.Array(Type.Unknown())], { errorMessage: "'{field}' must be a string or an array of content blocks" }),
  },
  { additionalProperties: true, errorMessage: { type: "'{field}' must be an object with role and content" } },
);
const AnthropicRequest = {
  model: model(),
  messages: messages(AnthropicMessage),
  system: anything("a string or an array of text blocks"),
  temperature: num(0, 1),
  top_p: num(0, 1),
  top_k: int(0, 1_000_000),
  seed: seed(),
  stop_sequences: stop(),
  tools: list("client tools: {name, description?, input_schema}"),
  tool_choice: obj("{type: auto | any | tool | none, name?}"),
  metadata: obj(Metadata),
  thinking: obj(),
  output_config: obj("{format: {type: json_schema, schema}}"),
};
export const MessagesBody = open(
  {
    ...AnthropicRequest,
    max_tokens: Type.Integer({
      minimum: 1,
      maximum: MAX_OUTPUT_TOKENS,
      errorMessage: { required: "'max_tokens' is required", default: "'{field}' must be an integer", minimum: range(1, MAX_OUTPUT_TOKENS), maximum: range(1, MAX_OUTPUT_TOKENS) },
    }),
    stream: bool(),
  },
  "Anthropic Messages request",
);
export const CountTokensBody = open(AnthropicRequest, "Anthropic count_tokens request");

const OllamaOptions = opt(
  Type.Object(
    {
      num_predict: opt(Type.Union([Type.Literal(-1), Type.Literal(-2), Type.Integer({ minimum: 1, maximum: MAX_OUTPUT_TOKENS })]), `'{field}' must be -1, -2 or an integer between 1 and ${MAX_OUTPUT_TOKENS}`),
      temperature: num(0, 2),
      top_p: num(0, 1),
      top_k: int(0, 1_000_000),
      min_p: num(0, 1),
      repeat_penalty: num(0, 10),
      seed: seed(),
      stop: stop(),
    },
    { additionalProperties: true },
  ),
  { type: "'{field}' must be an object", anyOf: "'{field}' must be an object" },
  "sampling: temperature, top_p, top_k, min_p, num_predict, seed, stop, repeat_penalty",
);
const KeepAlive = opt(Type.Union([Type.String(), Type.Number()]), `'keep_alive' must be a duration such as "5m", "0" or "-1", or a number of seconds`, '"5m", "0", "-1" or seconds; 0 unloads the model after answering');
const OllamaMessage = Type.Object(
  {
    role: role(["system", "user", "assistant", "tool"], "'{field}' must be one of system, user, assistant, tool"),
    content: opt(Type.String(), "'{field}' must be a string"),
  },
  { additionalProperties: true, errorMessage: { type: "'{field}' must be an object with role and content" } },
);
const OllamaCommon = { model: model("a model name from GET /api/tags"), stream: bool(), options: OllamaOptions, keep_alive: KeepAlive, format: anything('"json" or a JSON Schema object') };

export const OllamaChatBody = open(
  { ...OllamaCommon, messages: opt(Type.Array(OllamaMessage), "'messages' must be a non-empty array", "none (or []) only loads the model"), tools: list("function tools") },
  "Ollama /api/chat request",
);
export const OllamaGenerateBody = open({ ...OllamaCommon, prompt: str("empty only loads the model"), system: str(), raw: bool() }, "Ollama /api/generate request");
export const OllamaEmbedBody = open({ model: model("a model name from GET /api/tags"), input: inputs(), truncate: bool(), keep_alive: KeepAlive }, "Ollama /api/embed request");
export const OllamaEmbeddingsBody = open({ model: model("a model name from GET /api/tags"), prompt: Type.String({ minLength: 1, errorMessage: "'{field}' is required and must be a non-empty string" }) }, "Ollama /api/embeddings request (legacy)");
export const ShowBody = open({ model: str("a model name (or `name`, its older spelling)"), name: str() }, "Ollama /api/show request: model (or name) is required");
