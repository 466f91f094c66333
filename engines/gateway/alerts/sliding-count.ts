// Counts events per subject (an IP, a token prefix) inside a sliding window, in bounded memory:
// only the last `cap` timestamps per subject are kept (enough to know "at least cap"), and idle
// subjects are swept, so a flood from many addresses cannot grow it without limit.
export class SlidingCount {
  private readonly hits = new Map<string, number[]>();
  private calls = 0;

  constructor(
    private readonly windowMs: number,
    private readonly maxSubjects = 50_000,
  ) {}

  /** Record one event at `now` and return how many fell inside the window (at most cap). */
  add(subject: string, now: number, cap: number): number {
    if (++this.calls % 1000 === 0 || this.hits.size >= this.maxSubjects) this.sweep(now);
    let list = this.hits.get(subject);
    if (!list) this.hits.set(subject, (list = []));
    list.push(now);
    const from = now - this.windowMs;
    let drop = 0;
    while (drop < list.length && list[drop] <= from) drop++;
    if (list.length - drop > cap) drop = list.length - cap;
    if (drop) list.splice(0, drop);
    return list.length;
  }

  reset(subject: string): void {
    this.hits.delete(subject);
  }

  private sweep(now: number): void {
    const from = now - this.windowMs;
    for (const [k, list] of this.hits) if (list[list.length - 1] <= from) this.hits.delete(k);
    // Still full after sweeping (a wide flood): forget everything rather than grow.
    if (this.hits.size >= this.maxSubjects) this.hits.clear();
  }
}
