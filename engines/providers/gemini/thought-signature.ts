// Gemini 3 answers a function call with a thoughtSignature on the call's part, and refuses (400)
// the next turn unless that signature comes back on the call. A client of svc's OpenAI or
// Anthropic protocol keeps nothing of a call but its id, which it sends back with the call and
// its result: svc appends the signature to the id (after a marker, base64url, so the id stays in
// the alphabet clients check, Anthropic's [a-zA-Z0-9_-]) and takes it out when the call returns.
// Ollama's protocol has no call ids: its clients cannot carry a signature.
const MARK = "__ts_";

/** The call id a client gets: the signature, when there is one, rides along. */
export function idWithSignature(id: string, signature: unknown): string {
  return typeof signature === "string" && signature ? `${id}${MARK}${Buffer.from(signature, "utf8").toString("base64url")}` : id;
}

/** The signature a returning call's id carries, if any. */
export function signatureOf(id: string | undefined): string | undefined {
  const at = id?.indexOf(MARK) ?? -1;
  if (at < 0) return undefined;
  return Buffer.from(id!.slice(at + MARK.length), "base64url").toString("utf8") || undefined;
}
