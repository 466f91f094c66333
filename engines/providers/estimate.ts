// Prompt token estimate used for reservations and per_request_max before the upstream counts.
// It is meant as an upper bound, so that a reservation covers what the upstream bills for the
// prompt: one token per 3 bytes of UTF-8 (BPE tokenizers average ~4 characters a token on
// English and ~1 token per CJK character, which is 3 bytes), plus 5 tokens of framing per
// message (role, separators; OpenAI counts 3-4) and 3 to prime the answer. Settlement uses the
// upstream's actual usage; the estimate only decides how much a request holds while in flight.
import type { ChatRequest } from "../chat/types";
import { IMAGE_TOKEN_ESTIMATE } from "../chat/images";

const MESSAGE_OVERHEAD = 5;
const PRIMING = 3;

/** Tokens of a text, rounded up (≈ UTF-8 bytes / 3; ASCII without the byte count). */
export function estimateTextTokens(s: string): number {
  return Math.ceil(utf8Bytes(s) / 3);
}

export function estimateTokens(req: ChatRequest): number {
  let bytes = req.prompt ? utf8Bytes(req.prompt) : 0;
  let n = PRIMING;
  for (const m of req.messages) {
    bytes += utf8Bytes(m.content);
    n += MESSAGE_OVERHEAD;
    if (m.parts) for (const p of m.parts) if (p.type === "image") n += IMAGE_TOKEN_ESTIMATE;
    if (m.toolCalls) for (const c of m.toolCalls) bytes += utf8Bytes(c.name) + utf8Bytes(c.arguments);
  }
  if (req.tools?.length) bytes += utf8Bytes(JSON.stringify(req.tools));
  return n + Math.ceil(bytes / 3);
}

/** Byte length without a native call for the common all-ASCII case of short strings. */
export function utf8Bytes(s: string): number {
  if (s.length > 256) return Buffer.byteLength(s, "utf8");
  for (let i = 0; i < s.length; i++) if (s.charCodeAt(i) > 127) return Buffer.byteLength(s, "utf8");
  return s.length;
}
