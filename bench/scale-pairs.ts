// The scale bench's ratio at 50 connections (bench/scale.ts): the SQLite replica and the
// PostgreSQL + Redis replica in alternating pairs, one pair moving with whatever else the machine
// did during it and the median of several not, with the CPU each process spent a request (/proc).
import { childrenOf, cpuMicros, sleep } from "./processes";

export interface Load { rps: number; mean: number; p50: number; p99: number; errors: number; non2xx: number }

/** CPU a request (µs, user + system over requests served) in each pair. */
export interface PairCpu { sqlite: number[]; replica: number[]; redis: number[]; postgresql: number[] }

export const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? NaN;

/** `n` pairs of a `lite` then a `shared` run of `seconds`; pids of the SQLite replica, the shared
 * replica, Redis and PostgreSQL's postmaster (its backends are its children). */
export async function alternatingPairs(
  n: number,
  seconds: number,
  lite: () => Promise<Load>,
  shared: () => Promise<Load>,
  pid: { sqlite?: number; replica?: number; redis: number; postgres: number },
): Promise<{ ratios: number[]; cpu: PairCpu }> {
  const ratios: number[] = [];
  const cpu: PairCpu = { sqlite: [], replica: [], redis: [], postgresql: [] };
  const pgCpu = () => [pid.postgres, ...childrenOf(pid.postgres)].reduce((t, p) => t + (cpuMicros(p) ?? 0), 0);
  const at = (p?: number) => cpuMicros(p) ?? 0;
  for (let i = 0; i < n; i++) {
    let c0 = at(pid.sqlite);
    const l = await lite();
    cpu.sqlite.push((at(pid.sqlite) - c0) / (l.rps * seconds));
    await sleep(1000); // its last flushes, out of the next run
    c0 = at(pid.replica);
    const [rd0, pg0] = [at(pid.redis), pgCpu()];
    const s = await shared();
    const served = s.rps * seconds;
    cpu.replica.push((at(pid.replica) - c0) / served);
    await sleep(1000); // the settles and the audit batch after the answers
    cpu.redis.push((at(pid.redis) - rd0) / served);
    cpu.postgresql.push((pgCpu() - pg0) / served);
    ratios.push(s.rps / l.rps);
  }
  return { ratios, cpu };
}

/** "the SQLite replica 75 µs; the PostgreSQL + Redis replica 80 µs, Redis 17 µs, PostgreSQL 11 µs" */
export function cpuLine(cpu: PairCpu): string {
  const us = (xs: number[]) => `${median(xs).toFixed(0)} µs`;
  return `the SQLite replica ${us(cpu.sqlite)}; the PostgreSQL + Redis replica ${us(cpu.replica)}, Redis ${us(cpu.redis)}, PostgreSQL ${us(cpu.postgresql)}`;
}
