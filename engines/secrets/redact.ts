// Redaction of secrets from text that leaves svc (error bodies, stream error events, logs, audit
// rows). Upstreams echo credentials in their errors ("Incorrect API key provided: Bearer …"), so
// every value resolved through a secret reference (credentials.ts) is remembered here and
// replaced wherever it appears, together with anything shaped like a key (sk-…, Bearer/Basic/
// Token credentials). Runs on error paths and log lines only, never on a successful request.

const MASK = "[redacted]";
/** Values shorter than this are not searched for (they would blank ordinary words). */
const MIN_SECRET = 6;
/** Remembered values: every resolution of every reference, old values included (an upstream may
 * echo a credential that was rotated a moment ago). Bounded: the oldest go first. */
const MAX_REMEMBERED = 1024;

const known = new Set<string>();
let ordered: string[] | null = null; // longest first, rebuilt on change

/** Remember a secret value so it is redacted from anything that leaves svc. */
export function rememberSecret(value: string | undefined): void {
  if (!value || value.length < MIN_SECRET || known.has(value)) return;
  if (known.size >= MAX_REMEMBERED) known.delete(known.values().next().value as string);
  known.add(value);
  ordered = null;
}

const KEY_SHAPES: Array<[RegExp, string]> = [
  // Authorization-style credentials: keep the scheme, drop the value ("Basic"/"Token" only before
  // a credential-length value, so prose such as "Token indices exceed …" stays readable)
  [/\b(Bearer)(\s+)[A-Za-z0-9._~+/=:-]{6,}/gi, `$1$2${MASK}`],
  [/\b(Basic|Token)(\s+)[A-Za-z0-9._~+/=:-]{16,}/gi, `$1$2${MASK}`],
  // OpenAI / Anthropic / svc style keys (sk-…, sk-ant-…, sk-proj-…, sk-svc-…)
  [/\bsk-[A-Za-z0-9_-]{6,}/g, `sk-${MASK}`],
  // x-api-key: value / api_key=value written out in a message
  [/\b(x-api-key|api[-_]?key)(["']?\s*[:=]\s*["']?)[^\s"',;]{6,}/gi, `$1$2${MASK}`],
];

/** The text with every remembered secret and every key-shaped value replaced. */
export function redactSecrets(text: string): string {
  if (!text) return text;
  let out = text;
  if (known.size) {
    ordered ??= [...known].sort((a, b) => b.length - a.length);
    for (const s of ordered) if (out.includes(s)) out = out.split(s).join(MASK);
  }
  for (const [re, to] of KEY_SHAPES) out = out.replace(re, to);
  return out;
}

/** Forget every remembered value (tests). */
export function forgetSecrets(): void {
  known.clear();
  ordered = null;
}
