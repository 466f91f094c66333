// Hit/miss counters. Each replica counts its own lookups (its /metrics, summed by Prometheus);
// in shared mode every replica also adds what it counted since its last flush to one Redis hash
// once a second and reads the totals back, so `svc cache stats` and the usage API show the
// whole cluster's hits rather than one replica's since its start.
export interface CacheCounters {
  hits: number;
  misses: number;
  bypassed: number;
  /** USD micros the hits would have cost upstream */
  savedUsdMicros: number;
}

export type CounterSet = CacheCounters & { models: Record<string, CacheCounters> };

export const FIELDS = ["hits", "misses", "bypassed", "savedUsdMicros"] as const;

export const zero = (): CacheCounters => ({ hits: 0, misses: 0, bypassed: 0, savedUsdMicros: 0 });

/** `a - b`, field by field, models included (what was counted since snapshot `b`). */
export function minus(a: CounterSet, b: CounterSet): CounterSet {
  const d = sub(a, b) as CounterSet;
  d.models = {};
  for (const [m, c] of Object.entries(a.models)) d.models[m] = sub(c, b.models[m] ?? zero());
  return d;
}

/** `a + b`, field by field, models included. */
export function plus(a: CounterSet, b: CounterSet): CounterSet {
  const s = add(a, b) as CounterSet;
  s.models = {};
  for (const m of new Set([...Object.keys(a.models), ...Object.keys(b.models)])) s.models[m] = add(a.models[m] ?? zero(), b.models[m] ?? zero());
  return s;
}

function sub(a: CacheCounters, b: CacheCounters): CacheCounters {
  return { hits: a.hits - b.hits, misses: a.misses - b.misses, bypassed: a.bypassed - b.bypassed, savedUsdMicros: a.savedUsdMicros - b.savedUsdMicros };
}

function add(a: CacheCounters, b: CacheCounters): CacheCounters {
  return { hits: a.hits + b.hits, misses: a.misses + b.misses, bypassed: a.bypassed + b.bypassed, savedUsdMicros: a.savedUsdMicros + b.savedUsdMicros };
}

/** The Redis hash's fields: `<field>` for the totals, `m:<model>:<field>` per model. */
export function toFields(d: CounterSet): Array<[string, number]> {
  const out: Array<[string, number]> = [];
  for (const f of FIELDS) if (d[f]) out.push([f, d[f]]);
  for (const [m, c] of Object.entries(d.models)) for (const f of FIELDS) if (c[f]) out.push([`m:${m}:${f}`, c[f]]);
  return out;
}

export function fromFields(h: Record<string, string>): CounterSet {
  const s = { ...zero(), models: {} } as CounterSet;
  for (const [k, v] of Object.entries(h)) {
    const n = Number(v) || 0;
    if ((FIELDS as readonly string[]).includes(k)) s[k as (typeof FIELDS)[number]] = n;
    else if (k.startsWith("m:")) {
      const i = k.lastIndexOf(":");
      const f = k.slice(i + 1) as (typeof FIELDS)[number];
      if (!(FIELDS as readonly string[]).includes(f)) continue;
      ((s.models[k.slice(2, i)] ??= zero())[f] = n);
    }
  }
  return s;
}
