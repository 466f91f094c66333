// Prompt token estimate used for reservations and per_request_max before the upstream counts:
// about 4 characters a token, plus a few tokens of framing per message. Deliberately
// conservative (rounded up); settlement uses the upstream's actual usage.
import type { ChatRequest } from "../chat/types";

export function estimateTokens(req: ChatRequest): number {
  let chars = req.prompt?.length ?? 0;
  let n = 3;
  for (const m of req.messages) {
    chars += m.content.length;
    n += 4;
    if (m.toolCalls) for (const c of m.toolCalls) chars += c.name.length + c.arguments.length;
  }
  if (req.tools?.length) chars += JSON.stringify(req.tools).length;
  return n + Math.ceil(chars / 4);
}
