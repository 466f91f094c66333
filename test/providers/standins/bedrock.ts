// Bedrock runtime stand-in: POST /model/{modelId}/converse and /converse-stream. Verifies the
// SigV4 signature as AWS does, by signing the received request again with the same library
// (@smithy/signature-v4, service "bedrock") and the secret of the access key it names, at the
// time it claims (x-amz-date, within 5 minutes): an unknown key is 403
// UnrecognizedClientException, a wrong signature 403 InvalidSignatureException (AWS's wording).
// Answers Converse JSON, and ConverseStream as application/vnd.amazon.eventstream frames
// encoded with @smithy/eventstream-codec (messageStart, contentBlockStart/Delta/Stop,
// messageStop, metadata).
import { Sha256 } from "@aws-crypto/sha256-js";
import { EventStreamCodec } from "@smithy/eventstream-codec";
import { SignatureV4 } from "@smithy/signature-v4";
import { fromUtf8, toUtf8 } from "@smithy/util-utf8";
import type { ServerResponse } from "node:http";
import { isBase64, COMPLETION_TOKENS, PROMPT_TOKENS, TOOL_ARGS, decide, json, loopback, pieces, type Recorded } from "./common";

const AUTH = /^AWS4-HMAC-SHA256 Credential=([^/]+)\/(\d{8})\/([^/]+)\/([^/]+)\/aws4_request, SignedHeaders=([^,]+), Signature=([0-9a-f]{64})$/;

function amzDate(s: string): Date | undefined {
  const m = /^(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})Z$/.exec(s);
  return m ? new Date(Date.UTC(+m[1], +m[2] - 1, +m[3], +m[4], +m[5], +m[6])) : undefined;
}

const denied = (res: ServerResponse, type: string, message: string) => json(res, 403, { message }, { "x-amzn-errortype": `${type}:http://internal.amazon.com/coral/com.amazon.coral.service/` });

/** null when the signature is good, else the refusal already sent. */
async function verify(rec: Recorded, res: ServerResponse, region: string, keys: Record<string, string>): Promise<boolean> {
  const m = AUTH.exec(String(rec.headers.authorization ?? ""));
  const date = amzDate(String(rec.headers["x-amz-date"] ?? ""));
  if (!m || !date) {
    denied(res, "MissingAuthenticationTokenException", "Missing Authentication Token");
    return false;
  }
  const [, akid, , scopeRegion, service, signedList] = m;
  const secret = keys[akid];
  if (!secret) {
    denied(res, "UnrecognizedClientException", "The security token included in the request is invalid.");
    return false;
  }
  if (Math.abs(Date.now() - date.getTime()) > 5 * 60_000) {
    denied(res, "InvalidSignatureException", "Signature expired: the request time is more than 5 minutes from the server time.");
    return false;
  }
  if (scopeRegion !== region || service !== "bedrock") {
    denied(res, "InvalidSignatureException", `Credential should be scoped to a valid region and service (${region}, bedrock).`);
    return false;
  }
  const headers: Record<string, string> = {};
  for (const h of signedList.split(";")) headers[h] = String(rec.headers[h] ?? "");
  const q = rec.url.indexOf("?");
  const path = q < 0 ? rec.url : rec.url.slice(0, q);
  const query: Record<string, string> = {};
  if (q >= 0) new URLSearchParams(rec.url.slice(q + 1)).forEach((v, k) => (query[k] = v));
  const host = headers.host ?? "";
  const [hostname, port] = host.split(":");
  const signer = new SignatureV4({ credentials: { accessKeyId: akid, secretAccessKey: secret, sessionToken: headers["x-amz-security-token"] }, region, service: "bedrock", sha256: Sha256 });
  const again = await signer.sign(
    { method: rec.method, protocol: "http:", hostname, port: port ? Number(port) : undefined, path, query, headers, body: rec.raw },
    { signingDate: date, unsignableHeaders: new Set(), signableHeaders: new Set(Object.keys(headers)) },
  );
  if (again.headers.authorization !== rec.headers.authorization) {
    denied(res, "InvalidSignatureException", "The request signature we calculated does not match the signature you provided. Check your AWS Secret Access Key and signing method. Consult the service documentation for details.");
    return false;
  }
  return true;
}

export async function bedrockStandIn(o: { region: string; keys: Record<string, string>; models: string[] }) {
  const codec = new EventStreamCodec(toUtf8, fromUtf8);
  const frame = (type: string, body: unknown) =>
    codec.encode({
      headers: {
        ":event-type": { type: "string", value: type },
        ":content-type": { type: "string", value: "application/json" },
        ":message-type": { type: "string", value: "event" },
      },
      body: fromUtf8(JSON.stringify(body)),
    });
  return loopback(async (req, res, rec) => {
    const m = /^\/model\/([^/]+)\/(converse|converse-stream)$/.exec(rec.url);
    if (!m || rec.method !== "POST") return json(res, 404, { message: "Not Found" }, { "x-amzn-errortype": "UnknownOperationException" });
    if (!(await verify(rec, res, o.region, o.keys))) return;
    const modelId = decodeURIComponent(m[1]);
    if (!o.models.includes(modelId)) return json(res, 400, { message: "The provided model identifier is invalid." }, { "x-amzn-errortype": "ValidationException" });
    const b = rec.body ?? {};
    if (!Array.isArray(b.messages) || b.messages.length === 0) return json(res, 400, { message: "A conversation must start with a user message." }, { "x-amzn-errortype": "ValidationException" });
    const last = [...b.messages].reverse().find((x: any) => x.role === "user");
    // ImageBlock: {format: png | jpeg | gif | webp, source: {bytes}} with the bytes base64 in JSON,
    // in a message or in a toolResult's content (ToolResultContentBlock: json, text, image, ...)
    const badImage = (c: any) => c?.image !== undefined && (!["png", "jpeg", "gif", "webp"].includes(c.image?.format) || !isBase64(c.image?.source?.bytes));
    for (const c of last?.content ?? []) {
      if (badImage(c) || (c?.toolResult && (!Array.isArray(c.toolResult.content) || c.toolResult.content.some(badImage)))) {
        return json(res, 400, { message: "The model returned the following errors: invalid image block" }, { "x-amzn-errortype": "ValidationException" });
      }
    }
    const text = (last?.content ?? []).map((c: any) => c.text ?? "").join("");
    const tc = b.toolConfig?.toolChoice;
    const forced = tc?.tool?.name ?? (tc?.any ? b.toolConfig.tools?.[0]?.toolSpec?.name : undefined);
    const d = decide(text, forced, (b.toolConfig?.tools ?? []).map((x: any) => x.toolSpec?.name));
    const usage = { inputTokens: PROMPT_TOKENS, outputTokens: COMPLETION_TOKENS, totalTokens: PROMPT_TOKENS + COMPLETION_TOKENS };
    const stopReason = "tool" in d ? "tool_use" : "end_turn";
    if (m[2] === "converse") {
      const content = "tool" in d ? [{ toolUse: { toolUseId: "tooluse_bedrock_1", name: d.tool, input: TOOL_ARGS } }] : [{ text: d.text }];
      return json(res, 200, { output: { message: { role: "assistant", content } }, stopReason, usage, metrics: { latencyMs: 5 } });
    }
    res.writeHead(200, { "content-type": "application/vnd.amazon.eventstream", "x-amzn-requestid": "standin" });
    res.write(frame("messageStart", { role: "assistant" }));
    if ("tool" in d) {
      res.write(frame("contentBlockStart", { contentBlockIndex: 0, start: { toolUse: { toolUseId: "tooluse_bedrock_1", name: d.tool } } }));
      for (const p of pieces(JSON.stringify(TOOL_ARGS).replace(":", ": "))) res.write(frame("contentBlockDelta", { contentBlockIndex: 0, delta: { toolUse: { input: p } } }));
    } else {
      for (const p of pieces(d.text)) res.write(frame("contentBlockDelta", { contentBlockIndex: 0, delta: { text: p } }));
    }
    res.write(frame("contentBlockStop", { contentBlockIndex: 0 }));
    res.write(frame("messageStop", { stopReason }));
    res.end(frame("metadata", { usage, metrics: { latencyMs: 5 } }));
  });
}
