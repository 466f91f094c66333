// Unusual-pattern detection per key, O(1) per request (the minute roll-over touches at most 60
// buckets). Two signals:
// - new_ip: after 20+ requests from a small fixed set of addresses (<= 3), a new address appears;
// - rate_spike: this minute's requests exceed 10x the trailing per-minute average (last hour,
//   at least 10 minutes of history) and at least 30.
const MIN_REQUESTS_FOR_IP_BASELINE = 20;
const FIXED_IP_SET_MAX = 3;
const TRACKED_IPS_MAX = 64;
const HISTORY_MINUTES = 60;
const MIN_HISTORY_MINUTES = 10;
const SPIKE_FACTOR = 10;
const SPIKE_MIN_REQUESTS = 30;

interface KeyUsage {
  total: number;
  ips: Set<string>;
  minute: number;
  minuteCount: number;
  /** counts of the previous minutes, oldest first, at most HISTORY_MINUTES */
  history: number[];
  historySum: number;
}

export interface PatternHit {
  reason: "new_ip" | "rate_spike";
  detail: Record<string, unknown>;
}

export class UsagePatterns {
  private readonly keys = new Map<string, KeyUsage>();

  observe(keyId: string, ip: string, nowMs: number): PatternHit | undefined {
    const minute = Math.floor(nowMs / 60_000);
    let u = this.keys.get(keyId);
    if (!u) {
      u = { total: 0, ips: new Set(), minute, minuteCount: 0, history: [], historySum: 0 };
      this.keys.set(keyId, u);
    }
    if (minute > u.minute) this.roll(u, minute);
    u.minuteCount++;
    u.total++;

    let hit: PatternHit | undefined;
    if (ip && !u.ips.has(ip)) {
      if (u.total - 1 >= MIN_REQUESTS_FOR_IP_BASELINE && u.ips.size > 0 && u.ips.size <= FIXED_IP_SET_MAX) {
        hit = { reason: "new_ip", detail: { ip_address: ip, known_ip_addresses: [...u.ips], requests_seen: u.total - 1 } };
      }
      if (u.ips.size < TRACKED_IPS_MAX) u.ips.add(ip);
    }
    if (!hit && u.history.length >= MIN_HISTORY_MINUTES) {
      const avg = u.historySum / u.history.length;
      if (u.minuteCount >= SPIKE_MIN_REQUESTS && u.minuteCount > SPIKE_FACTOR * avg) {
        hit = {
          reason: "rate_spike",
          detail: { requests_this_minute: u.minuteCount, trailing_average_per_minute: Math.round(avg * 100) / 100, ip_address: ip },
        };
      }
    }
    return hit;
  }

  forget(keyId: string): void {
    this.keys.delete(keyId);
  }

  private roll(u: KeyUsage, minute: number): void {
    const gap = Math.min(minute - u.minute, HISTORY_MINUTES + 1);
    this.push(u, u.minuteCount);
    for (let i = 1; i < gap; i++) this.push(u, 0);
    u.minute = minute;
    u.minuteCount = 0;
  }

  private push(u: KeyUsage, n: number): void {
    u.history.push(n);
    u.historySum += n;
    if (u.history.length > HISTORY_MINUTES) u.historySum -= u.history.shift()!;
  }
}
