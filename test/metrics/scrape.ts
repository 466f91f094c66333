// Reading Prometheus text the way a scraper does: one sample per line, `name{labels} value`.

export interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

export function parse(text: string): Sample[] {
  const out: Sample[] = [];
  for (const line of text.split("\n")) {
    if (!line || line.startsWith("#")) continue;
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!m) throw new Error(`not a Prometheus sample line: ${line}`);
    const labels: Record<string, string> = {};
    for (const l of (m[2] ?? "").matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)) labels[l[1]] = l[2];
    out.push({ name: m[1], labels, value: m[3] === "+Inf" ? Infinity : Number(m[3]) });
  }
  return out;
}

/** Samples named `name` whose labels include `labels`. */
export function find(samples: Sample[], name: string, labels: Record<string, string> = {}): Sample[] {
  return samples.filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v));
}

/** The one sample named `name` with exactly these labels (undefined when absent). */
export function value(samples: Sample[], name: string, labels: Record<string, string>): number | undefined {
  const hit = samples.filter((s) => s.name === name && Object.keys(s.labels).length === Object.keys(labels).length && Object.entries(labels).every(([k, v]) => s.labels[k] === v));
  if (hit.length > 1) throw new Error(`${name} ${JSON.stringify(labels)} appears ${hit.length} times`);
  return hit[0]?.value;
}
