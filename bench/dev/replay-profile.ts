// Where a replay's time goes, on a store filled once and kept (/tmp/svc-replay-dev): the raw read,
// the read as entries, and the whole replay, each with wall and CPU time. A PostgreSQL server
// started here is left running for the next run (its URL in /tmp/svc-replay-dev/pg-url).
// `node --cpu-prof --import tsx bench/dev/replay-profile.ts sqlite|pg [raw|entries|replay]...`
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { performance } from "node:perf_hooks";
import { openStore } from "../../engines/store/open";
import { replay } from "../../engines/gateway/replay";
import { auditEntries } from "../../engines/gateway/replay/entries";
import { replayRows } from "../../prisma/repos/audit-replay";
import { fill, stateFor } from "../replay";
import { startPostgres } from "../../test/helpers/services";

const DIR = "/tmp/svc-replay-dev";
const DAY = 86_400_000;
const day = Math.floor(Date.parse("2026-11-27T00:00:00Z") / DAY) * DAY;
const store = process.argv[2] ?? "sqlite";
const phases = process.argv.slice(3).length ? process.argv.slice(3) : ["raw", "entries", "replay"];
mkdirSync(DIR, { recursive: true });
const home = path.join(DIR, store);
const fresh = !existsSync(home);
mkdirSync(home, { recursive: true });
const env = { ...process.env, SVC_DATABASE_URL: "" };
if (store === "pg") {
  const urlFile = path.join(DIR, "pg-url");
  if (!existsSync(urlFile)) writeFileSync(urlFile, (await startPostgres()).url);
  env.SVC_DATABASE_URL = readFileSync(urlFile, "utf8");
}
const db = await openStore(home, { env, backgroundCheckpoints: false });
if (fresh) console.log("fill s", ((await fill(db, day)) / 1000).toFixed(1));
// CPU seconds of each thread of this process (/proc), sampled: the busiest thread bounds the
// replay's wall time on an idle machine, whatever the load now
const threads = new Map<string, { name: string; cpu: number }>();
const sample = () => {
  for (const tid of readdirSync("/proc/self/task")) {
    try {
      const st = readFileSync(`/proc/self/task/${tid}/stat`, "utf8");
      const f = st.slice(st.lastIndexOf(")") + 2).split(" ");
      const name = st.slice(st.indexOf("(") + 1, st.lastIndexOf(")"));
      threads.set(tid, { name, cpu: (+f[11] + +f[12]) / 100 });
    } catch {
      /* a thread that ended */
    }
  }
};
const timed = async (label: string, f: () => Promise<unknown>) => {
  sample();
  const before = new Map([...threads].map(([t, x]) => [t, x.cpu]));
  const every = setInterval(sample, 50);
  const t0 = performance.now();
  const c0 = process.cpuUsage();
  const r = await f();
  const c = process.cpuUsage(c0);
  clearInterval(every);
  sample();
  console.log(label, "wall s", ((performance.now() - t0) / 1000).toFixed(2), "cpu s", ((c.user + c.system) / 1e6).toFixed(2), r);
  const busy = [...threads].map(([t, x]) => [x.name, x.cpu - (before.get(t) ?? 0)] as const).filter(([, c]) => c > 0.2);
  console.log("  threads cpu s:", busy.map(([n, c]) => `${n} ${c.toFixed(2)}`).join(", "));
};
for (const p of phases) {
  if (p === "raw") await timed("raw", async () => { let n = 0; for await (const pg of replayRows(db, day, day + DAY)) n += pg.length; return n; });
  if (p === "entries") await timed("entries", async () => { let n = 0; for await (const pg of auditEntries(db, day, day + DAY)) n += pg.length; return n; });
  if (p === "replay") await timed("replay", async () => (await replay(db, stateFor(false), stateFor(true), { from: day, to: day + DAY })).summary);
}
await db.close();
