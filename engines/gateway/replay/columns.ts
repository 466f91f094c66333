// A page of entries as typed arrays and string indices, and the judgements of a page the same
// way: what goes between the replay and its worker (parallel.ts). Structured cloning an object
// per entry costs about as much as judging it; typed arrays are moved, not copied, and each
// distinct string (a key id, a model, a refusal) crosses once, the first time it appears.
import type { ReplayEntry } from "./entries";
import type { Judged, Outcome } from "./judge";

export interface PageColumns {
  n: number;
  /** strings first seen on this page, appended to the receiver's table in order */
  strings: string[];
  ts: Float64Array;
  /** keyId, action, model, provider, status, ip: indices into the string table (-1: null) */
  s: Int32Array;
  tokens: Float64Array;
  /** [index on the page, metadata.routing] of the few entries that carry routing hints */
  routing: Array<[number, NonNullable<ReplayEntry["routing"]>]>;
}

const S = 6;

/** Interns strings on the sending side: each string's index, new ones collected for the page. */
export class StringTable {
  private readonly ids = new Map<string, number>();
  private fresh: string[] = [];

  id(s: string | null): number {
    if (s === null) return -1;
    let i = this.ids.get(s);
    if (i === undefined) {
      i = this.ids.size;
      this.ids.set(s, i);
      this.fresh.push(s);
    }
    return i;
  }

  take(): string[] {
    const f = this.fresh;
    this.fresh = [];
    return f;
  }
}

export function encodePage(page: readonly ReplayEntry[], t: StringTable): PageColumns {
  const n = page.length;
  const ts = new Float64Array(n);
  const s = new Int32Array(n * S);
  const tokens = new Float64Array(n * 2);
  const routing: PageColumns["routing"] = [];
  for (let i = 0; i < n; i++) {
    const e = page[i];
    ts[i] = e.ts;
    const o = i * S;
    s[o] = t.id(e.keyId);
    s[o + 1] = t.id(e.action);
    s[o + 2] = t.id(e.model);
    s[o + 3] = t.id(e.provider);
    s[o + 4] = t.id(e.status);
    s[o + 5] = t.id(e.ip);
    tokens[i * 2] = e.promptTokens;
    tokens[i * 2 + 1] = e.completionTokens;
    if (e.routing) routing.push([i, e.routing]);
  }
  return { n, strings: t.take(), ts, s, tokens, routing };
}

/** The entries of a page again (ids and recorded costs stay behind: judging does not read them). */
export function decodePage(c: PageColumns, table: string[]): ReplayEntry[] {
  for (const x of c.strings) table.push(x);
  const str = (i: number) => (i < 0 ? null : table[i]);
  const out: ReplayEntry[] = new Array(c.n);
  for (let i = 0; i < c.n; i++) {
    const o = i * S;
    out[i] = { id: "", ts: c.ts[i], keyId: table[c.s[o]], action: table[c.s[o + 1]], model: str(c.s[o + 2]), provider: str(c.s[o + 3]), status: table[c.s[o + 4]], promptTokens: c.tokens[i * 2], completionTokens: c.tokens[i * 2 + 1], costMicros: 0, ip: str(c.s[o + 5]), routing: undefined };
  }
  for (const [i, r] of c.routing) out[i].routing = r;
  return out;
}

export interface JudgedColumns {
  n: number;
  /** outcomes (refusal, provider and model) first seen on this page, as JSON */
  outcomes: string[];
  /** per entry: index into the outcome table (-1: not judged) */
  outcome: Int32Array;
  usd: Float64Array;
}

/** Interns judgements (without their spend) on the worker's side. */
export class OutcomeTable {
  private readonly t = new StringTable();
  /** provider -> model -> index: the common outcome without building a string */
  private readonly routes = new Map<string | null, Map<string | null, number>>();

  private served(provider: string | null, model: string | null): number {
    let m = this.routes.get(provider);
    if (!m) this.routes.set(provider, (m = new Map()));
    let i = m.get(model);
    if (i === undefined) m.set(model, (i = this.t.id(JSON.stringify([null, provider, model]))));
    return i;
  }

  encode(js: ReadonlyArray<Judged | null>): JudgedColumns {
    const n = js.length;
    const outcome = new Int32Array(n);
    const usd = new Float64Array(n);
    for (let i = 0; i < n; i++) {
      const j = js[i];
      if (!j) {
        outcome[i] = -1;
        continue;
      }
      outcome[i] = j.refused ? this.t.id(JSON.stringify([j.refused, null, null])) : this.served(j.provider ?? null, j.model ?? null);
      usd[i] = j.usdMicros;
    }
    return { n, outcomes: this.t.take(), outcome, usd };
  }
}

/** An outcome of the worker's table again. */
export function outcomeOf(x: string): Outcome {
  const [refused, provider, model] = JSON.parse(x);
  const o: Outcome = {};
  if (refused) o.refused = refused;
  if (provider !== null) o.provider = provider;
  if (model !== null) o.model = model;
  return o;
}
