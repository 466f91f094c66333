// Metric families for the request hot path. prom-client's labeled children hash their label
// object on every inc/observe (and its histogram allocates per observation); here a child is a
// plain cell made once per label set, so counting a request is a field add. The families speak
// prom-client's metric contract (name, help, type, get()), so a prom-client Registry formats them
// with everything else at scrape time.

export interface CounterCell {
  value: number;
  readonly labels: Readonly<Record<string, string>>;
}

export interface HistogramCell {
  readonly labels: Readonly<Record<string, string>>;
  /** observations per bucket (not cumulative); the last slot is above every bound */
  readonly counts: Float64Array;
  sum: number;
  count: number;
}

interface MetricValue {
  labels: Record<string, string | number>;
  value: number;
  metricName?: string;
}

abstract class Family<C> {
  readonly aggregator = "sum";
  protected readonly cells: C[] = [];
  abstract readonly type: "counter" | "histogram";

  constructor(
    readonly name: string,
    readonly help: string,
    readonly labelNames: readonly string[],
  ) {}

  protected labelsOf(values: readonly string[]): Record<string, string> {
    if (values.length !== this.labelNames.length) throw new Error(`${this.name}: expected ${this.labelNames.length} label values`);
    const labels: Record<string, string> = {};
    this.labelNames.forEach((n, i) => (labels[n] = values[i]));
    return Object.freeze(labels);
  }

  /** prom-client's metric contract: called by Registry.metrics() at scrape time */
  async get(): Promise<{ name: string; help: string; type: string; aggregator: string; values: MetricValue[] }> {
    return { name: this.name, help: this.help, type: this.type, aggregator: this.aggregator, values: this.values() };
  }

  protected abstract values(): MetricValue[];
}

/** A counter whose children are cells: `cell.value += n` on the hot path. */
export class CounterFamily extends Family<CounterCell> {
  readonly type = "counter";

  /** a new cell for these label values (callers keep it; ask once per label set) */
  cell(...values: string[]): CounterCell {
    const c: CounterCell = { value: 0, labels: this.labelsOf(values) };
    this.cells.push(c);
    return c;
  }

  protected values(): MetricValue[] {
    return this.cells.map((c) => ({ labels: { ...c.labels }, value: c.value }));
  }
}

/** A histogram whose children are cells; `observe` is a bucket scan and three adds. */
export class HistogramFamily extends Family<HistogramCell> {
  readonly type = "histogram";

  constructor(name: string, help: string, labelNames: readonly string[], readonly bounds: readonly number[]) {
    super(name, help, labelNames);
  }

  cell(...values: string[]): HistogramCell {
    const c: HistogramCell = { labels: this.labelsOf(values), counts: new Float64Array(this.bounds.length + 1), sum: 0, count: 0 };
    this.cells.push(c);
    return c;
  }

  observe(c: HistogramCell, v: number): void {
    const b = this.bounds;
    let i = 0;
    while (i < b.length && v > b[i]) i++;
    c.counts[i]++;
    c.sum += v;
    c.count++;
  }

  protected values(): MetricValue[] {
    const out: MetricValue[] = [];
    const bucket = `${this.name}_bucket`;
    for (const c of this.cells) {
      let acc = 0;
      this.bounds.forEach((le, i) => {
        acc += c.counts[i];
        out.push({ labels: { ...c.labels, le }, value: acc, metricName: bucket });
      });
      out.push({ labels: { ...c.labels, le: "+Inf" }, value: c.count, metricName: bucket });
      out.push({ labels: { ...c.labels }, value: c.sum, metricName: `${this.name}_sum` });
      out.push({ labels: { ...c.labels }, value: c.count, metricName: `${this.name}_count` });
    }
    return out;
  }
}

/** Cells keyed by two or three strings through nested Maps: a lookup allocates nothing and joins
 * no strings; the cell is made on the first request with that label set. */
export class CellIndex<T> {
  private readonly root = new Map<string, Map<string, Map<string, T>>>();

  constructor(private readonly make: (a: string, b: string, c: string) => T) {}

  get(a: string, b: string, c = ""): T {
    let m1 = this.root.get(a);
    if (!m1) this.root.set(a, (m1 = new Map()));
    let m2 = m1.get(b);
    if (!m2) m1.set(b, (m2 = new Map()));
    let t = m2.get(c);
    if (t === undefined) m2.set(c, (t = this.make(a, b, c)));
    return t;
  }
}
