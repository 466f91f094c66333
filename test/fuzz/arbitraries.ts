// fast-check arbitraries for malformed requests: ids, query strings, headers and bodies, biased
// toward what breaks parsers (lone UTF-16 surrogates, bad escapes, wrong types, deep nesting,
// huge numbers, bytes that are not UTF-8) and toward the fields svc's routes read.
import fc from "fast-check";

/** A string that may hold a lone surrogate, control characters or escapes. */
export const nastyString: fc.Arbitrary<string> = fc.oneof(
  fc.string({ maxLength: 40 }),
  fc.constantFrom("tiny", "default", "m", "x", "1", "helper"),
  fc.string({ unit: "binary", maxLength: 20 }),
  fc.constantFrom("", " ", "\ud800", "a\udc00b", "\ud83d", "%", "%zz", "%00", "..", "../..", "/", "\r\n", "\u0000", "null", "undefined", "__proto__", "constructor", "sk-svc-", "${x}", "*", "a".repeat(3000)),
  { arbitrary: fc.tuple(fc.string({ maxLength: 10 }), fc.constantFrom("\ud800", "\udfff", "\r\nx: y", "\u0000")).map(([a, b]) => a + b), weight: 3 },
);

const scalar: fc.Arbitrary<unknown> = fc.oneof(
  nastyString,
  fc.integer(),
  fc.double(),
  fc.constantFrom(-1, 0, 1e308, -1e308, 2 ** 53 + 1, true, false, null),
);

/** Any JSON value, strings included nasty ones. */
export const nastyValue: fc.Arbitrary<unknown> = fc.letrec((tie) => ({
  value: fc.oneof({ depthSize: "small", withCrossShrink: true }, scalar, fc.array(tie("value"), { maxLength: 4 }), fc.dictionary(nastyString, tie("value"), { maxKeys: 4 })),
})).value;

/** Fields svc's routes read, so generated objects reach past the first type check. */
const FIELDS = [
  "model", "messages", "prompt", "input", "stream", "max_tokens", "temperature", "tools", "tool_choice", "stop", "n", "id", "name", "arguments",
  "document", "documents", "plan", "confirm", "prune", "allowPruneAll", "source", "wait", "agent", "text", "query", "k", "code", "invite",
  "public_key", "session_id", "seq", "nonce", "ciphertext", "client_epk", "client_nonce", "ttl_seconds", "scopes", "expires_in", "url",
  "size", "response_format", "options", "format", "keep_alive", "conversation_id", "metadata", "policies", "permissions", "limits", "system",
  "role", "content", "seconds", "duration", "job_id", "answer", "jsonrpc", "method", "params", "device_id", "signature", "challenge",
];

const messages = fc.array(fc.record({ role: fc.oneof(fc.constantFrom("user", "system", "assistant", "tool"), nastyString), content: fc.oneof(nastyString, nastyValue) }, { requiredKeys: [] }), { maxLength: 3 });

/** An object of known fields with wrong, odd or right-looking values. */
export const fieldObject: fc.Arbitrary<Record<string, unknown>> = fc.dictionary(fc.constantFrom(...FIELDS), fc.oneof(nastyValue, messages), { maxKeys: 6 });

/** Every known field at once, all with one value or each with its own: whichever field a route
 * reads first gets an odd value. */
export const everyField: fc.Arbitrary<Record<string, unknown>> = fc.oneof(
  fc.oneof(nastyString, nastyValue).map((v) => Object.fromEntries(FIELDS.map((f) => [f, v]))),
  fc.tuple(...FIELDS.map(() => fc.oneof(nastyValue, messages))).map((vs) => Object.fromEntries(FIELDS.map((f, i) => [f, vs[i]]))),
);

export type Body = { kind: "none" } | { kind: "text"; text: string } | { kind: "bytes"; bytes: Uint8Array };

/** A request body: none, JSON of any shape, an object of known fields, truncated or non-UTF-8. */
export const body: fc.Arbitrary<Body> = fc.oneof(
  fc.constant<Body>({ kind: "none" }),
  { arbitrary: fieldObject.map((o): Body => ({ kind: "text", text: JSON.stringify(o) })), weight: 2 },
  { arbitrary: everyField.map((o): Body => ({ kind: "text", text: JSON.stringify(o) })), weight: 5 },
  nastyValue.map((v): Body => ({ kind: "text", text: JSON.stringify(v) ?? "null" })),
  fc.constantFrom<Body>(
    { kind: "text", text: "" },
    { kind: "text", text: "null" },
    { kind: "text", text: "[]" },
    { kind: "text", text: "{" },
    { kind: "text", text: '{"id":"\\ud800"}' },
    { kind: "text", text: '{"document":"apiVersion: svc/v1\\nkind: Agent\\nmetadata: {name: \\"\\\\ud800\\"}\\nspec: {}\\n"}' },
    { kind: "text", text: '{"documents":[{"apiVersion":"svc/v1","kind":"Agent","metadata":{"name":"\\ud800"},"spec":{}}]}' },
    { kind: "text", text: "[".repeat(5000) + "]".repeat(5000) },
    { kind: "text", text: '{"a":' + "[".repeat(200) + "]".repeat(200) + "}" },
  ),
  fc.uint8Array({ maxLength: 64 }).map((bytes): Body => ({ kind: "bytes", bytes })),
  fc.string({ maxLength: 60 }).map((text): Body => ({ kind: "text", text })),
);

/** Percent-encode every byte of a string's UTF-8 (lone surrogates as the raw surrogate's 3 bytes,
 * which are not UTF-8), leaving unreserved characters. */
export function encodeAll(s: string): string {
  let out = "";
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (/[A-Za-z0-9\-._~]/.test(s[i])) out += s[i];
    else if (c >= 0xd800 && c <= 0xdfff) {
      const hi = c >= 0xd800 && c <= 0xdbff && i + 1 < s.length ? s.charCodeAt(i + 1) : 0;
      if (hi >= 0xdc00 && hi <= 0xdfff) {
        out += encodeURIComponent(s.slice(i, i + 2));
        i++;
      } else out += `%${(0xe0 | (c >> 12)).toString(16)}%${(0x80 | ((c >> 6) & 0x3f)).toString(16)}%${(0x80 | (c & 0x3f)).toString(16)}`.toUpperCase();
    } else out += encodeURIComponent(s[i]);
  }
  return out;
}

/** A path segment: encoded arbitrary text, or a raw token that is legal in a request line. */
export const segment: fc.Arbitrary<string> = fc.oneof(
  nastyString.map(encodeAll),
  fc.constantFrom("x", "1", "%", "%zz", "%2F", "%2e%2e", "..", ".", "", "%ED%A0%80", "%00", "a%20b", "tiny", "default", "ZZ"),
);

const QUERY_KEYS = ["format", "includeApiOwned", "limit", "agent", "q", "query", "k", "cursor", "since", "until", "key_id", "action", "status", "wait", "confirm", "prune", "source", "api_key", "model", "offset"];

/** A query string ("" or "?…") with known and unknown keys, malformed escapes included. */
export const query: fc.Arbitrary<string> = fc
  .array(fc.tuple(fc.oneof(fc.constantFrom(...QUERY_KEYS), nastyString.map(encodeAll)), fc.oneof(nastyString.map(encodeAll), fc.constantFrom("%", "%zz", "true", "-1", "1e999", "yaml", "json", ""))), { maxLength: 4 })
  .map((kv) => (kv.length ? "?" + kv.map(([k, v]) => `${k}=${v}`).join("&") : ""));

const token = fc.stringMatching(/^[\x21-\x7e]{0,40}$/);

/** Headers a client might send, odd values included (all legal on the wire). */
export function headers(adminKey: string): fc.Arbitrary<Record<string, string>> {
  return fc.record(
    {
      "content-type": fc.oneof(fc.constantFrom("application/json", "text/plain", "application/yaml", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x", "application/json; charset=latin1", ""), token),
      // mostly a key svc accepts (or none, below): a bad credential stops a request at 401
      authorization: fc.oneof({ arbitrary: fc.constant(`Bearer ${adminKey}`), weight: 6 }, { arbitrary: fc.constantFrom("Bearer ", "Bearer none", "Bearer sk-svc-0000", "Basic !!!", "Basic Og==", "Token", "Digest x"), weight: 1 }, { arbitrary: token, weight: 1 }),
      "x-api-key": fc.constantFrom("", adminKey),
      "x-svc-agent-id": token,
      "x-svc-conversation-id": token,
      "mcp-session-id": token,
      "mcp-protocol-version": fc.constantFrom("2025-03-26", "2025-06-18", "1999-01-01", "x"),
      accept: fc.constantFrom("application/json", "text/event-stream", "application/json, text/event-stream", "*/*", "x"),
      "idempotency-key": token,
      "x-request-id": token,
    },
    { requiredKeys: [] },
  );
}
