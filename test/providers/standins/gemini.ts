// Gemini API and Vertex AI stand-ins (one answer shape: GenerateContentResponse, JSON or SSE with
// ?alt=sse), plus the OAuth token endpoint Vertex's tokens come from.
//  - Gemini: POST /v1beta/models/{model}:generateContent | :streamGenerateContent?alt=sse with
//    x-goog-api-key; a wrong key is 400 INVALID_ARGUMENT "API key not valid" (as Google answers).
//  - token endpoint: POST /token, the JWT bearer grant; checks the RS256 signature against the
//    service account's public key, iss, aud (its own URL), scope and exp; issues opaque tokens
//    that expire after `tokenSeconds`.
//  - Vertex: POST /v1/projects/{p}/locations/{l}/publishers/google/models/{m}:generateContent
//    (and :streamGenerateContent) with Authorization: Bearer <a live token it issued>; else 401
//    UNAUTHENTICATED; a project or location other than its own is 403 / 404.
import { createPublicKey, createVerify, randomBytes, type KeyObject } from "node:crypto";
import type { ServerResponse } from "node:http";
import { COMPLETION_TOKENS, PROMPT_TOKENS, TOOL_ARGS, decide, isBase64, json, loopback, pieces, type Recorded } from "./common";

/** thoughtSignatures a Gemini 3 model of the stand-in gave its function calls */
const signed = new Set<string>();

function answer(res: ServerResponse, rec: Recorded, stream: boolean, model: string) {
  const b = rec.body ?? {};
  if (!Array.isArray(b.contents) || b.contents.length === 0) {
    return json(res, 400, { error: { code: 400, message: "* GenerateContentRequest.contents: contents is not specified", status: "INVALID_ARGUMENT" } });
  }
  // Gemini 3 models sign their function calls (Part.thoughtSignature, opaque base64) and refuse a
  // history whose model turns hold a function call without the signature it was given
  const gemini3 = /^gemini-3/.test(model);
  if (gemini3) {
    for (const c of b.contents) {
      if (c?.role !== "model") continue;
      for (const p of c.parts ?? []) {
        if (p?.functionCall && !signed.has(p.thoughtSignature)) {
          return json(res, 400, { error: { code: 400, message: "Function call is missing a thought_signature in functionCall parts. This is required for tools to work correctly, and missing thought_signature may lead to degraded model performance.", status: "INVALID_ARGUMENT" } });
        }
      }
    }
  }
  const signature = () => {
    const sig = randomBytes(40).toString("base64"); // '+', '/' and '=' included, as real ones have
    signed.add(sig);
    return { thoughtSignature: sig };
  };
  // Part.inlineData {mimeType, data (base64)} and Part.fileData {mimeType, fileUri} (snake_case too)
  for (const c of b.contents) {
    for (const p of c?.parts ?? []) {
      const inline = p?.inlineData ?? p?.inline_data;
      const file = p?.fileData ?? p?.file_data;
      if (inline && !(typeof (inline.mimeType ?? inline.mime_type) === "string" && isBase64(inline.data))) {
        return json(res, 400, { error: { code: 400, message: "Invalid value at 'contents.parts.inline_data'", status: "INVALID_ARGUMENT" } });
      }
      if (file && !(typeof (file.mimeType ?? file.mime_type) === "string" && typeof (file.fileUri ?? file.file_uri) === "string")) {
        return json(res, 400, { error: { code: 400, message: "Invalid value at 'contents.parts.file_data'", status: "INVALID_ARGUMENT" } });
      }
    }
  }
  // a turn answering function calls holds as many functionResponse parts as the model turn before
  // it has functionCall parts (other parts, such as images, may sit beside them)
  for (const [i, c] of b.contents.entries()) {
    const answers = (c?.parts ?? []).filter((p: any) => p?.functionResponse).length;
    const calls = (b.contents[i - 1]?.parts ?? []).filter((p: any) => p?.functionCall).length;
    if (answers && (b.contents[i - 1]?.role !== "model" || answers !== calls)) {
      return json(res, 400, { error: { code: 400, message: "Please ensure that the number of function response parts is equal to the number of function call parts of the function call turn.", status: "INVALID_ARGUMENT" } });
    }
  }
  const last = [...b.contents].reverse().find((c: any) => c.role === "user" && c.parts?.some((p: any) => typeof p.text === "string"));
  const text = (last?.parts ?? []).map((p: any) => p.text ?? "").join("");
  // Google's 429: the wait is in the body (google.rpc.RetryInfo), there is no Retry-After header
  if (text.includes("exhaust the quota")) {
    return json(res, 429, {
      error: {
        code: 429,
        message: "You exceeded your current quota, please check your plan and billing details.",
        status: "RESOURCE_EXHAUSTED",
        details: [{ "@type": "type.googleapis.com/google.rpc.RetryInfo", retryDelay: "37s" }],
      },
    });
  }
  const fc = b.toolConfig?.functionCallingConfig;
  const forced = fc?.mode === "ANY" ? (fc.allowedFunctionNames?.[0] ?? b.tools?.[0]?.functionDeclarations?.[0]?.name) : undefined;
  const d = decide(text, forced, fc?.mode === "NONE" ? [] : (b.tools?.[0]?.functionDeclarations ?? []).map((x: any) => x.name));
  const usageMetadata = { promptTokenCount: PROMPT_TOKENS, candidatesTokenCount: COMPLETION_TOKENS, totalTokenCount: PROMPT_TOKENS + COMPLETION_TOKENS };
  const cand = (parts: unknown[], finishReason?: string) => ({ content: { role: "model", parts }, ...(finishReason ? { finishReason } : {}), index: 0 });
  if (!stream) {
    const parts = "tool" in d ? [{ functionCall: { name: d.tool, args: TOOL_ARGS }, ...(gemini3 ? signature() : {}) }] : [{ text: d.text }];
    return json(res, 200, { candidates: [cand(parts, "STOP")], usageMetadata, modelVersion: model });
  }
  res.writeHead(200, { "content-type": "text/event-stream" });
  const send = (o: unknown) => res.write(`data: ${JSON.stringify(o)}\r\n\r\n`);
  if ("tool" in d) send({ candidates: [cand([{ functionCall: { name: d.tool, args: TOOL_ARGS }, ...(gemini3 ? signature() : {}) }], "STOP")], usageMetadata, modelVersion: model });
  else {
    const ps = pieces(d.text);
    ps.forEach((p, i) => send({ candidates: [cand([{ text: p }], i === ps.length - 1 ? "STOP" : undefined)], ...(i === ps.length - 1 ? { usageMetadata } : {}), modelVersion: model }));
  }
  res.end();
}

const modelCall = /\/models\/([^/:]+):(generateContent|streamGenerateContent)$/;

export async function geminiStandIn(o: { apiKey: string; models: string[] }) {
  return loopback((req, res, rec) => {
    const u = new URL(rec.url, "http://x");
    const m = /^\/v1beta\/models\/([^/:]+):(generateContent|streamGenerateContent)$/.exec(u.pathname);
    if (!m) return json(res, 404, { error: { code: 404, message: "Not found", status: "NOT_FOUND" } });
    if (rec.headers["x-goog-api-key"] !== o.apiKey) {
      return json(res, 400, {
        error: {
          code: 400,
          message: "API key not valid. Please pass a valid API key.",
          status: "INVALID_ARGUMENT",
          details: [{ "@type": "type.googleapis.com/google.rpc.ErrorInfo", reason: "API_KEY_INVALID", domain: "googleapis.com" }],
        },
      });
    }
    if (!o.models.includes(m[1])) return json(res, 404, { error: { code: 404, message: `models/${m[1]} is not found for API version v1beta`, status: "NOT_FOUND" } });
    const stream = m[2] === "streamGenerateContent";
    if (stream && u.searchParams.get("alt") !== "sse") return json(res, 400, { error: { code: 400, message: "this stand-in streams only with alt=sse", status: "INVALID_ARGUMENT" } });
    answer(res, rec, stream, m[1]);
  });
}

/** OAuth token endpoint for service-account JWTs. `tokenUrl` is the URL clients must name as aud. */
export async function googleTokenStandIn(o: { clientEmail: string; publicKeyPem: string; tokenSeconds?: number }) {
  const key: KeyObject = createPublicKey(o.publicKeyPem);
  const issued = new Map<string, number>(); // token -> expiry (ms)
  let tokenUrl = "";
  const lb = await loopback((req, res, rec) => {
    if (rec.method !== "POST" || !rec.url.startsWith("/token")) return json(res, 404, { error: "not_found" });
    const f = new URLSearchParams(rec.raw);
    const bad = (d: string) => json(res, 400, { error: "invalid_grant", error_description: d });
    if (f.get("grant_type") !== "urn:ietf:params:oauth:grant-type:jwt-bearer") return json(res, 400, { error: "unsupported_grant_type", error_description: "Invalid grant_type" });
    const parts = (f.get("assertion") ?? "").split(".");
    if (parts.length !== 3) return bad("Invalid JWT");
    let head: any;
    let claims: any;
    try {
      head = JSON.parse(Buffer.from(parts[0], "base64url").toString());
      claims = JSON.parse(Buffer.from(parts[1], "base64url").toString());
    } catch {
      return bad("Invalid JWT");
    }
    if (head.alg !== "RS256") return bad("Invalid JWT: alg");
    if (!createVerify("RSA-SHA256").update(`${parts[0]}.${parts[1]}`).verify(key, Buffer.from(parts[2], "base64url"))) return bad("Invalid JWT Signature.");
    const now = Math.floor(Date.now() / 1000);
    if (claims.iss !== o.clientEmail) return bad("Invalid JWT: iss");
    if (claims.aud !== tokenUrl) return bad(`Invalid JWT: aud must be ${tokenUrl}`);
    if (!String(claims.scope ?? "").includes("https://www.googleapis.com/auth/cloud-platform")) return bad("Invalid JWT: scope");
    if (!(claims.exp > now && claims.iat <= now + 60 && claims.exp - claims.iat <= 3600)) return bad("Invalid JWT: Token must be a short-lived token (60 minutes) and in a reasonable timeframe.");
    const token = `ya29.standin-${randomBytes(18).toString("base64url")}`;
    const life = o.tokenSeconds ?? 3600;
    issued.set(token, Date.now() + life * 1000);
    json(res, 200, { access_token: token, expires_in: life, token_type: "Bearer" });
  });
  tokenUrl = `${lb.origin}/token`;
  return { ...lb, tokenUrl, issued, valid: (t: string | undefined) => !!t && (issued.get(t) ?? 0) > Date.now() };
}

export async function vertexStandIn(o: { project: string; location: string; models: string[]; tokens: { valid(t: string | undefined): boolean } }) {
  return loopback((req, res, rec) => {
    const u = new URL(rec.url, "http://x");
    const m = /^\/v1\/projects\/([^/]+)\/locations\/([^/]+)\/publishers\/google(\/models\/[^/:]+:(?:generateContent|streamGenerateContent))$/.exec(u.pathname);
    if (!m) return json(res, 404, { error: { code: 404, message: "Not found", status: "NOT_FOUND" } });
    const bearer = /^Bearer (.+)$/.exec(String(rec.headers.authorization ?? ""))?.[1];
    if (!o.tokens.valid(bearer)) {
      return json(res, 401, {
        error: {
          code: 401,
          message: "Request had invalid authentication credentials. Expected OAuth 2 access token, login cookie or other valid authentication credential. See https://developers.google.com/identity/sign-in/web/devconsole-project.",
          status: "UNAUTHENTICATED",
        },
      });
    }
    if (m[1] !== o.project) return json(res, 403, { error: { code: 403, message: `Permission denied on resource project ${m[1]}.`, status: "PERMISSION_DENIED" } });
    if (m[2] !== o.location) return json(res, 404, { error: { code: 404, message: `Location ${m[2]} is not supported.`, status: "NOT_FOUND" } });
    const mc = modelCall.exec(m[3])!;
    if (!o.models.includes(mc[1])) return json(res, 404, { error: { code: 404, message: `Publisher Model projects/${m[1]}/locations/${m[2]}/publishers/google/models/${mc[1]} not found.`, status: "NOT_FOUND" } });
    const stream = mc[2] === "streamGenerateContent";
    answer(res, rec, stream, mc[1]);
  });
}
