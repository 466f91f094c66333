// Embedded mode's scheduler: timers of this process on the engine's Clock (a ManualClock in
// tests), exactly as memory always ran on one server. Shared mode's is pg/jobs.ts.
import type { Clock, TimerHandle } from "./clock";
import type { Maybe, MemoryScheduler, PendingSession, SchedulerHost } from "./backend";

const sessionKey = (agent: string, conv: string) => `${agent}\u0000${conv}`;

export class LocalScheduler implements MemoryScheduler {
  readonly shared = false;
  private readonly debounces = new Map<string, TimerHandle>();
  private consolidationTimer?: TimerHandle;
  private scheduledInterval = 0;
  private host?: SchedulerHost;

  constructor(private readonly clock: () => Clock) {}

  start(host: SchedulerHost): void {
    this.host = host;
  }

  arm(agent: string, conv: string, ms: number, trigger: string): void {
    const k = sessionKey(agent, conv);
    this.debounces.get(k)?.cancel();
    this.debounces.set(k, this.clock().after(ms, () => {
      this.debounces.delete(k);
      this.host?.due(agent, conv, trigger);
    }));
  }

  disarm(agent: string, conv: string): void {
    const k = sessionKey(agent, conv);
    this.debounces.get(k)?.cancel();
    this.debounces.delete(k);
  }

  armMissing(sessions: PendingSession[], ms: number): void {
    for (const p of sessions) if (!this.debounces.has(sessionKey(p.agent, p.conversationId))) this.arm(p.agent, p.conversationId, ms, "debounce");
  }

  armed(agent: string, conv: string): boolean {
    return this.debounces.has(sessionKey(agent, conv));
  }

  disarmAgent(agent: string): void {
    for (const [k, t] of this.debounces) if (k.startsWith(agent + "\u0000")) (t.cancel(), this.debounces.delete(k));
  }

  consolidateEvery(ms: number): void {
    if (ms === this.scheduledInterval && this.consolidationTimer) return;
    this.consolidationTimer?.cancel();
    this.scheduledInterval = ms;
    this.consolidationTimer = this.clock().after(ms, () => {
      this.consolidationTimer = undefined;
      this.host?.consolidationDue();
    });
  }

  /** One process: SQLite's transactions already keep a consolidation whole, and the distiller
   * serializes distillations of a session itself. */
  exclusive<T>(_what: string, _agent: string, _conv: string, fn: () => Maybe<T>): Maybe<T> {
    return fn();
  }

  /** Timers dropped (signals stay pending: re-armed at the next start). */
  async close(): Promise<void> {
    this.reset();
  }

  reset(): void {
    for (const t of this.debounces.values()) t.cancel();
    this.debounces.clear();
    this.consolidationTimer?.cancel();
    this.consolidationTimer = undefined;
    this.scheduledInterval = 0;
  }
}
