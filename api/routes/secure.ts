// The secure channel (engines/pairing/channel.ts holds the cryptography).
//   POST /secure/session {client_epk, client_nonce, ttl_seconds?}
//        -> 201 {session_id, server_epk, expires_at, signature, server}; the signature is the
//        server identity's Ed25519 signature of the transcript (sessionTranscript).
//   POST /secure/call {session_id, seq, nonce, ciphertext}; the plaintext is the inner request
//        {method, path, headers?, body? (text) | body_base64?}. Answer: 200 application/x-ndjson,
//        one sealed frame a line {n, nonce, ciphertext}: {type: "head", status, headers}, then
//        {type: "data", data (base64)} as the inner answer streams, then {type: "end", frames,
//        bytes}. Refusals before dispatch are plain errors: 404 unknown session, 401
//        session_expired, 400 decryption_failed, 409 replay_refused.
// The inner request goes to the same handlers as a direct one (api/secure-dispatch.ts), as the
// outer caller's address. Administration stays loopback-only and is never served through the
// channel (403), and a channel inside the channel is refused.
import Router from "@koa/router";
import { validateHeaderName, validateHeaderValue } from "node:http";
import { canonicalTarget, isAdminPath } from "../canonical-path";
import { once } from "node:events";
import type { Svc } from "../../engines/svc";
import { SvcError, invalidRequest } from "../../engines/errors";
import { x25519Public } from "../../engines/pairing/crypto";
import { jsonBody } from "../body-schema";
import { SecureCallBody, SecureSessionBody } from "../../schemas/api/pairing";
import { callerFrom } from "../caller";
import { dispatchInner } from "../secure-dispatch";
import { pairCaller, pairingOf } from "../pair-access";
import { traceField } from "../../engines/telemetry";

const HOP = new Set(["host", "connection", "content-length", "transfer-encoding", "keep-alive", "upgrade", "te", "trailer"]);
const readSession = jsonBody("post", "/secure/session", SecureSessionBody);
const readCall = jsonBody("post", "/secure/call", SecureCallBody);

function innerOf(plain: Buffer) {
  let j: any;
  try {
    j = JSON.parse(plain.toString("utf8"));
  } catch {
    throw invalidRequest("the inner request is not JSON {method, path, headers, body}");
  }
  const method = typeof j?.method === "string" ? j.method.toUpperCase() : "";
  if (!/^(GET|POST|PUT|PATCH|DELETE|HEAD)$/.test(method)) throw invalidRequest("inner method must be GET, POST, PUT, PATCH, DELETE or HEAD", "method");
  if (typeof j.path !== "string" || !j.path.startsWith("/") || j.path.startsWith("//") || !/^[\x21-\x7e]+$/.test(j.path)) throw invalidRequest("inner path must be an absolute path of printable ASCII (percent-encode the rest), such as /v1/chat/completions", "path");
  // checked on the canonical path, the one the handler routes (api/canonical-path.ts)
  const target = canonicalTarget(j.path);
  const bare = target.path.toLowerCase();
  if (isAdminPath(bare)) throw new SvcError("forbidden", "permission_denied", "administration routes are served on loopback only, never through the secure channel");
  if (bare === "/secure" || bare.startsWith("/secure/")) throw invalidRequest("the secure channel cannot carry another secure-channel call", "path");
  const headers: Record<string, string> = {};
  if (j.headers !== undefined) {
    if (typeof j.headers !== "object" || j.headers === null || Array.isArray(j.headers)) throw invalidRequest("inner headers must be an object of strings", "headers");
    for (const [k, v] of Object.entries(j.headers)) {
      if (typeof v !== "string") throw invalidRequest(`inner header ${JSON.stringify(k.slice(0, 100))} must be a string`, "headers");
      checkHeader(k, v);
      if (!HOP.has(k.toLowerCase())) headers[k.toLowerCase()] = v;
    }
  }
  let body: Buffer | undefined;
  if (typeof j.body_base64 === "string") body = Buffer.from(j.body_base64, "base64");
  else if (typeof j.body === "string") body = Buffer.from(j.body, "utf8");
  else if (j.body !== undefined && j.body !== null) {
    body = Buffer.from(JSON.stringify(j.body), "utf8");
    headers["content-type"] ??= "application/json";
  }
  return { method, path: target.path + target.query, headers, body };
}

/** An inner header must be one HTTP would carry: a token name and a value without CR, LF or NUL
 * (Node's own checks, so what passes here is what the dispatch can send). */
function checkHeader(name: string, value: string): void {
  try {
    validateHeaderName(name);
    validateHeaderValue(name, value);
  } catch {
    throw invalidRequest(`inner header ${JSON.stringify(name.slice(0, 100))} is not a valid HTTP header: names are tokens (letters, digits, !#$%&'*+-.^_\`|~), values hold no CR, LF or other control characters`, "headers");
  }
}

export default function secure(svc: Svc): Router {
  const r = new Router();

  r.post("/secure/session", async (ctx) => {
    const p = pairingOf(svc);
    const key = pairCaller(svc, ctx); // optional: ties the session to a paired device (unpair ends it)
    const b = await readSession(ctx);
    try {
      x25519Public(b.client_epk); // the shape is the schema's; whether it is a key, the code's
    } catch {
      throw invalidRequest("client_epk must be an ephemeral X25519 public key: base64url of 32 raw bytes", "client_epk");
    }
    const ttl = b.ttl_seconds;
    const s = await p.sessions.open(b.client_epk, b.client_nonce, ttl, key && p.device(key.id) ? key.id : undefined);
    ctx.status = 201;
    ctx.body = { session_id: s.session_id, server_epk: s.server_epk, expires_at: s.expires_at, expires_ms: s.expires_ms, signature: s.signature, server: p.server() };
  });

  r.post("/secure/call", async (ctx) => {
    const p = pairingOf(svc);
    const b = await readCall(ctx);
    const { session, plaintext } = await p.sessions.accept(b.session_id, b.seq, { nonce: b.nonce, ciphertext: b.ciphertext });
    const inner = innerOf(plaintext);
    inner.headers["x-request-id"] ??= String(ctx.state.requestId ?? "");
    const caller = callerFrom(ctx);
    const abort = new AbortController();
    const onClose = () => {
      if (!ctx.res.writableFinished) abort.abort();
    };
    ctx.res.on("close", onClose);
    const answer = await dispatchInner(svc, { ...inner, headers: { host: ctx.get("host") || "localhost", ...inner.headers } }, { address: caller.ip, port: ctx.req.socket.remotePort }, { sessionId: session.id, deviceId: session.deviceId }, abort.signal);
    const seq = b.seq as number;
    let n = 0;
    let bytes = 0;
    const res = ctx.res;
    ctx.respond = false;
    res.writeHead(200, { "content-type": "application/x-ndjson", "cache-control": "no-store", "x-request-id": String(ctx.state.requestId ?? "") });
    const send = async (frame: unknown) => {
      const line = JSON.stringify({ n, ...p.sessions.sealFrame(session, seq, n, frame) }) + "\n";
      n++;
      if (!res.write(line)) await once(res, "drain");
    };
    try {
      const headers: Record<string, string> = {};
      for (const [k, v] of Object.entries(answer.headers)) if (v !== undefined && !HOP.has(k)) headers[k] = Array.isArray(v) ? v.join(", ") : v;
      await send({ type: "head", status: answer.statusCode, headers });
      for await (const chunk of answer) {
        bytes += chunk.length;
        await send({ type: "data", data: Buffer.from(chunk).toString("base64") });
      }
      await send({ type: "end", frames: n, bytes });
      res.end();
    } catch (e: any) {
      if (!abort.signal.aborted) svc.log.warn("secure call failed mid-answer", { err: String(e?.message ?? e), ...traceField(ctx.state.span) });
      res.destroy(); // no end frame: the client knows the answer is incomplete
    } finally {
      ctx.res.off("close", onClose);
    }
  });

  return r;
}
