// Engines speak no HTTP (docs/architecture.md "Engines speak no HTTP"): no module under engines/ builds a status code, a
// response header of svc's or a protocol's error body. The one error type (engines/errors.ts)
// carries a kind and typed limit data; api/errors.ts maps them. Providers are HTTP clients of
// upstreams, so reading an upstream's answer (its status, its Retry-After) is allowed; building
// svc's own answer is not.
// (codemod-errors: skip: the examples in the second test are bad code on purpose.)
import { readdirSync, readFileSync, statSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";

const root = path.resolve(__dirname, "../../engines");

function* files(dir: string): Generator<string> {
  for (const n of readdirSync(dir)) {
    const p = path.join(dir, n);
    if (statSync(p).isDirectory()) yield* files(p);
    else if (p.endsWith(".ts")) yield p;
  }
}

/** Source without comments (line and block), so prose may name headers. */
function code(text: string): string {
  return text.replace(/\/\*[\s\S]*?\*\//g, "").replace(/(^|[^:"'`\\])\/\/.*$/gm, "$1");
}

/** [what, pattern, folder under engines/ the rule does not cover] */
const RULES: Array<[string, RegExp, string?]> = [
  ["an error built with an HTTP status", /new\s+\w*Error\(\s*[1-5]\d\d\b/],
  ["an HTTP status given to an error", /\bstatus:\s*[1-5]\d\d\b/],
  ["svc's rate-limit headers", /["'`]x-ratelimit-/i],
  ["a Retry-After header built", /["'`]retry-after["'`]\s*:/i],
  ["an OpenAI error body", /\btoOpenAI\b|\btoAnthropic\b|\btoOllama\b/],
  // compared with (=== / !==) is an upstream's error type being read, which providers do
  ["an OpenAI error type", /(?<![=!]==\s*)["'`](invalid_request_error|authentication_error|permission_error|rate_limit_error|insufficient_quota)["'`]/],
  ["an HTTP status turned into an error kind", /\bkindOfStatus\(|\bupstreamError\(\s*[1-5]\d\d\b/],
  ["a list envelope", /\bobject:\s*["'`]list["'`]|\bhas_more\b|\bnext_cursor\b/],
  ["a decision on svc's own route", /\broute\.(includes|startsWith|endsWith)\(/],
  ["an HTTP server of an engine's own", /\bcreateServer\(|\bhttp\.Server\b/],
  // providers are HTTP clients: an upstream's paths (its /v1/messages) are theirs to build
  ["one of svc's route paths built", /[`"'](\/v1|\/api|\/tasks|\/agents|\/memory|\/mcp)\/(\$\{|[a-z-]+["'`/])|[`"'](\/v1|\/api|\/tasks|\/agents|\/memory|\/mcp)\/["'`]/, "providers/"],
];

describe("engines speak no HTTP", () => {
  it("no status code, svc response header or protocol error body is built under engines/", () => {
    const found: string[] = [];
    for (const f of files(root)) {
      const src = code(readFileSync(f, "utf8"));
      src.split("\n").forEach((line, i) => {
        for (const [what, re, except] of RULES) if (re.test(line) && !(except && path.relative(root, f).startsWith(except))) found.push(`${path.relative(root, f)}:${i + 1}: ${what}: ${line.trim().slice(0, 120)}`);
      });
    }
    expect(found).toEqual([]);
  });

  it("the check itself finds each kind of violation", () => {
    const bad = [
      'throw new SvcError(429, "rate_limit_exceeded", "x")',
      "return { status: 503, body }",
      'h["x-ratelimit-limit-requests"] = "3"',
      'const h = { "retry-after": "5" }',
      "ctx.body = err.toOpenAI()",
      'const type = "rate_limit_error"',
      "throw new SvcError(kindOfStatus(404), code, m)",
      'throw upstreamError(502, "upstream_error", m)',
      'return { object: "list", data }',
      "const page = { data, has_more: more }",
      'if (caller.route.includes("embed")) audit = "embeddings"',
      "poll_url: `/tasks/${id}`",
      'return "/api/" + name',
      "const server = createServer((req, res) => {})",
    ];
    for (const line of bad) expect(RULES.some(([, re]) => re.test(code(line))), line).toBe(true);
    expect(RULES.some(([, re]) => re.test(code('// the x-ratelimit-* headers: api/errors.ts')))).toBe(false);
    // reading an upstream's answer is allowed: its error type compared, not one of svc's built
    expect(RULES.some(([, re]) => re.test(code('if (e?.type === "rate_limit_error") return upstreamError("rate_limited", code, m)')))).toBe(false);
  });
});
