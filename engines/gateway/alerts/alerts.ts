// Alerts: turn what the pipeline sees into key.* webhook events, without flooding receivers.
// Every method is synchronous and cheap for the request path; the only database work is one
// AlertMark insert per newly crossed budget threshold (the insert is the once-only check, so a
// restart, or a second process, does not fire the same threshold again). With replicas, the
// once-a-minute/hour throttles claim each alert in Redis before sending, and failed
// authentications are counted there, so they add up across replicas (share()).
import type { PrismaClient } from "../../../prisma/client";
import type { AlertSettingsSpec } from "../../../schemas/kinds/alert-settings";
import type { KeyRef, WebhookEventName } from "../key-types";
import type { WebhookOutbox } from "../outbox/webhooks";
import { BUDGET_PERIODS, budgetMark, periodId, type BudgetPeriod } from "./periods";
import { SlidingCount } from "./sliding-count";
import { UsagePatterns } from "./usage-patterns";

const LIMIT_EVENT_INTERVAL_MS = 60_000;
const FAILED_AUTH_WINDOW_MS = 5 * 60_000;
const SUSPICIOUS_INTERVAL_MS = 60 * 60_000;

export interface AlertsOptions {
  outbox: WebhookOutbox;
  /** alert e-mails to budget_alerts.notify_email (engines/gateway/outbox/email.ts) */
  email?: { alert(key: KeyRef, event: WebhookEventName, data: Record<string, unknown>): void };
  prisma: PrismaClient;
  settings: () => AlertSettingsSpec;
  now?: () => Date;
  log?: (m: string) => void;
  /** Known key for a token prefix (e.g. a revoked or expired key's token), if the caller can tell. */
  keyForToken?: (tokenPrefix: string) => KeyRef | undefined;
}

/** What replicas share (engines/cluster/shared-alerts.ts). Both reject when the shared store
 * cannot answer; Alerts then goes on alone. */
export interface SharedAlerts {
  /** The right to send one throttled alert: true for the first claim of `id` within `ttlMs`. */
  claim(id: string, ttlMs: number): Promise<boolean>;
  /** Count one failure of `subject` and return the count within the window (at `threshold` the
   * count starts afresh, as SlidingCount's reset does here). */
  countFailure(subject: string, windowMs: number, threshold: number): Promise<number>;
}

export class Alerts {
  private readonly now: () => Date;
  private readonly log: (m: string) => void;
  private readonly lastLimitEvent = new Map<string, number>();
  private readonly lastSuspicious = new Map<string, number>();
  /** budget marks fired (or being inserted) in this process, by "period:id": skips the database.
   * Only current periods are kept; older ones are dropped when a new one begins. */
  private readonly marks = new Map<string, Set<string>>();
  private readonly failedByIp = new SlidingCount(FAILED_AUTH_WINDOW_MS);
  private readonly failedByToken = new SlidingCount(FAILED_AUTH_WINDOW_MS);
  private readonly patterns = new UsagePatterns();
  private readonly pending = new Set<Promise<unknown>>();
  private shared: SharedAlerts | undefined;

  constructor(private readonly opts: AlertsOptions) {
    this.now = opts.now ?? (() => new Date());
    this.log = opts.log ?? ((m) => console.error(m));
  }

  /**
   * Work across replicas: the once-a-minute and once-an-hour throttles hold for all of them (each
   * replica still skips what it sent itself, and claims the rest before sending), and failed
   * authentications are counted together.
   */
  share(shared: SharedAlerts | undefined): void {
    this.shared = shared;
  }

  /** key.limit_exceeded, at most once per key and limit per minute. */
  limitExceeded(key: KeyRef, limit: string, detail: Record<string, unknown>): void {
    if (!this.firstIn(this.lastLimitEvent, `${key.id}\u0000${limit}`, LIMIT_EVENT_INTERVAL_MS)) return;
    this.throttled(`limit:${key.id}:${limit}`, LIMIT_EVENT_INTERVAL_MS, () => this.send(key, "key.limit_exceeded", { ...detail, limit }));
  }

  /**
   * AlertSettings.rate_limit_percentage: when an admitted request leaves the key's rate window
   * at or above that share used, send key.limit_exceeded with kind "rate_limit_warning" (before
   * the limit refuses anything), at most once per key per minute.
   */
  rateUsage(key: KeyRef, limit: number, remaining: number): void {
    const pct = this.opts.settings().rate_limit_percentage;
    if (!pct || limit <= 0) return;
    const used = Math.round(((limit - remaining) / limit) * 100);
    if (used < pct) return;
    this.limitExceeded(key, "rate_limit_warning", { kind: "rate_limit_warning", used_percentage: used, threshold_percentage: pct, requests_limit: limit, requests_remaining: remaining });
  }

  /** key.budget_threshold once per threshold per period (UTC day, UTC month, lifetime). */
  spendChanged(
    key: KeyRef,
    spend: { dailyMicros: bigint; monthlyMicros: bigint; totalMicros: bigint },
    /** in units of `currency`, the key's budget currency (spend is counted in it too) */
    budgets: { daily?: number; monthly?: number; total?: number; currency?: string },
    thresholds: number[],
  ): void {
    const list = thresholds.length ? thresholds : this.opts.settings().budget_threshold;
    if (!list.length) return;
    const currency = budgets.currency ?? "USD";
    const spent: Record<BudgetPeriod, bigint> = { daily: spend.dailyMicros, monthly: spend.monthlyMicros, total: spend.totalMicros };
    let now: Date | undefined;
    for (const period of BUDGET_PERIODS) {
      const budget = budgets[period];
      if (budget === undefined || !(budget > 0)) continue; // a zero budget allows nothing: no percentage
      const percent = (Number(spent[period]) / (budget * 1e6)) * 100;
      for (const t of list) {
        if (percent < t) continue;
        now ??= this.now();
        const pid = periodId(period, now);
        const seen = this.marksOf(period, pid);
        const memo = `${key.id}\u0000${t}`;
        if (seen.has(memo)) continue;
        seen.add(memo);
        const mark = budgetMark(period, pid, t);
        this.track(
          this.fireOnce(key, mark, "key.budget_threshold", {
            period,
            period_id: pid,
            threshold: t,
            percent_used: Math.round(percent * 100) / 100,
            spend: Number(spent[period]) / 1e6,
            budget,
            currency,
            // the names these had before budgets took other currencies: only when they are true
            ...(currency === "USD" ? { spend_usd: Number(spent[period]) / 1e6, budget_usd: budget } : {}),
          }),
        );
      }
    }
  }

  /**
   * A failed authentication. After settings.failed_auth_threshold failures within 5 minutes from
   * one IP, or with one token prefix, emits key.suspicious_activity for the key the token
   * belongs to when known (`key`, or opts.keyForToken), else only logs.
   */
  failedAuth(tokenPrefix: string, ip: string, key?: KeyRef): void {
    const threshold = Math.max(1, this.opts.settings().failed_auth_threshold);
    const shared = this.shared;
    if (!shared) return this.failuresCounted(this.countLocally(tokenPrefix, ip, threshold), threshold, tokenPrefix, ip, key);
    const count = (subject: string) => shared.countFailure(subject, FAILED_AUTH_WINDOW_MS, threshold);
    this.track(
      Promise.all([tokenPrefix ? count(`token:${tokenPrefix}`) : 0, ip ? count(`ip:${ip}`) : 0]).then(
        (counts) => this.failuresCounted(counts, threshold, tokenPrefix, ip, key),
        (e) => {
          this.log(`alerts: cannot count failed authentications with other replicas (${String(e?.message ?? e)}); counting here`);
          this.failuresCounted(this.countLocally(tokenPrefix, ip, threshold), threshold, tokenPrefix, ip, key);
        },
      ),
    );
  }

  /** [by token, by IP] within the window; at the threshold a count starts afresh, so the next
   * report needs another `threshold` failures. */
  private countLocally(tokenPrefix: string, ip: string, threshold: number): [number, number] {
    const now = this.now().getTime();
    const byToken = tokenPrefix ? this.failedByToken.add(tokenPrefix, now, threshold) : 0;
    const byIp = ip ? this.failedByIp.add(ip, now, threshold) : 0;
    if (byToken >= threshold) this.failedByToken.reset(tokenPrefix);
    if (byIp >= threshold) this.failedByIp.reset(ip);
    return [byToken, byIp];
  }

  private failuresCounted([byToken, byIp]: [number, number], threshold: number, tokenPrefix: string, ip: string, key?: KeyRef): void {
    if (byToken < threshold && byIp < threshold) return;
    const known = key ?? (tokenPrefix ? this.opts.keyForToken?.(tokenPrefix) : undefined);
    const detail = {
      reason: "failed_auth",
      failures: threshold,
      window_seconds: FAILED_AUTH_WINDOW_MS / 1000,
      by: byToken >= threshold ? "token" : "ip_address",
      ip_address: ip,
      token_prefix: tokenPrefix,
    };
    if (known) this.suspicious(known, "failed_auth", detail);
    else this.log(`alerts: ${threshold} failed authentications within 5 minutes (ip ${ip || "?"}, token ${tokenPrefix || "-"}), no known key`);
  }

  /** Unusual usage patterns (settings.unusual_patterns): new IP, rate spike. */
  requestSeen(key: KeyRef, ip: string): void {
    if (!this.opts.settings().unusual_patterns) return;
    const hit = this.patterns.observe(key.id, ip, this.now().getTime());
    if (hit) this.suspicious(key, "unusual_pattern", { reason: hit.reason, ...hit.detail });
  }

  /** Wait for pending alert writes (tests, shutdown before the outbox closes). */
  async idle(): Promise<void> {
    while (this.pending.size) await Promise.allSettled([...this.pending]);
  }

  close(): Promise<void> {
    return this.idle();
  }

  private marksOf(period: BudgetPeriod, pid: string): Set<string> {
    const id = `${period}:${pid}`;
    let set = this.marks.get(id);
    if (!set) {
      for (const k of this.marks.keys()) if (k.startsWith(`${period}:`)) this.marks.delete(k);
      this.marks.set(id, (set = new Set()));
    }
    return set;
  }

  /** key.suspicious_activity at most once per hour per key and kind. */
  private suspicious(key: KeyRef, kind: string, detail: Record<string, unknown>): void {
    if (!this.firstIn(this.lastSuspicious, `${key.id}\u0000${kind}`, SUSPICIOUS_INTERVAL_MS)) return;
    this.throttled(`suspicious:${key.id}:${kind}`, SUSPICIOUS_INTERVAL_MS, () => {
      this.log(`alerts: suspicious activity on key ${key.id}: ${String(detail.reason)}`);
      this.send(key, "key.suspicious_activity", detail);
    });
  }

  /** True (and noted) when this process sent nothing under `id` within the last `ms`. */
  private firstIn(last: Map<string, number>, id: string, ms: number): boolean {
    const now = this.now().getTime();
    const at = last.get(id);
    // now < at: the clock was stepped back since; not a reason to stay silent until it catches up
    if (at !== undefined && now - at < ms && now >= at) return false;
    if (last.size > 10_000) prune(last, now - ms);
    last.set(id, now);
    return true;
  }

  /** Send now, or once another replica has not claimed `id` within `ms`. If the shared store
   * cannot answer, send anyway: a repeated alert is better than a lost one. */
  private throttled(id: string, ms: number, send: () => void): void {
    const shared = this.shared;
    if (!shared) return send();
    this.track(
      shared.claim(id, ms).then(
        (won) => won && send(),
        (e) => {
          this.log(`alerts: cannot check other replicas' alerts (${String(e?.message ?? e)}); sending`);
          send();
        },
      ),
    );
  }

  /** Insert the AlertMark; only the inserter emits. A unique violation means it already fired. */
  private async fireOnce(key: KeyRef, mark: string, event: "key.budget_threshold", data: Record<string, unknown>): Promise<void> {
    try {
      await this.opts.prisma.alertMark.create({ data: { keyId: key.id, mark, firedAt: this.now() } });
    } catch (e: any) {
      if (e?.code === "P2002") return;
      // Could not persist: better to alert (maybe again after a restart) than never.
      this.log(`alerts: could not record ${mark} for key ${key.id}: ${String(e?.message ?? e)}`);
    }
    this.send(key, event, data);
  }

  /** One alert out: the key's webhook (when it lists the event) and its notify_email. */
  private send(key: KeyRef, event: WebhookEventName, data: Record<string, unknown>): void {
    this.opts.outbox.emit(key, event, data);
    this.opts.email?.alert(key, event, data);
  }

  private track(p: Promise<unknown>): void {
    this.pending.add(p);
    p.finally(() => this.pending.delete(p)).catch(() => undefined);
  }
}

function prune(m: Map<string, number>, before: number): void {
  for (const [k, t] of m) if (t < before) m.delete(k);
}
