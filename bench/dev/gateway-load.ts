// Dev tool (not a test): svc in this process (profile it with --cpu-prof), the stand-in upstream
// and autocannon in child processes. node --cpu-prof --import tsx bench/dev/gateway-load.ts [connections] [seconds]
// NOAUDIT=1 replaces audit.record with a no-op (to see what the audit write path costs).
// SURVIVORS=<file.json> writes a sampling heap profile of the objects that outlived a
// young-generation GC (what makes scavenges slow and fills the old generation), by allocation site.
import { spawn } from "node:child_process";
import { startEnv } from "../../test/gateway/fixtures";
import { Session } from "node:inspector/promises";
import { writeFileSync } from "node:fs";
import { startStandin } from "../processes";
const conns = process.argv[2] ?? "50";
const secs = process.argv[3] ?? "5";
const up = await startStandin();
const env = await startEnv();
await env.apply([
  { kind: "Provider", name: "standin", spec: { type: "openai", baseUrl: up.url, models: [{ name: "bench-model", inputPerMillion: 0.5, outputPerMillion: 1.5 }] } },
  { kind: "AccessPolicy", name: "p", spec: { version: "2024-01-01", statements: [{ effect: "Allow", actions: ["*"], resources: ["model:bench-model"] }, { effect: "Deny", actions: ["*"], resources: ["provider:forbidden"] }] } },
]);
const k = await env.key({
  key_type: "user", organization_id: "o", team_id: "t", user_id: "u", policies: ["p"],
  rate_limits: { per_minute: 100_000_000, burst: 100_000_000, per_hour: 1_000_000_000 },
  budget_limits: { daily: 1_000_000, monthly: 1_000_000 }, token_limits: { per_request_max: 4096, daily: 1e12 },
  ip_allowlist: { enabled: true, addresses: ["127.0.0.0/8"] },
});
if (process.env.NOAUDIT) env.gw.audit.record = () => {};
const body = JSON.stringify({ model: "bench-model", messages: [{ role: "user", content: "Say hello." }], max_tokens: 16 });
const survivors = process.env.SURVIVORS ? new Session() : undefined;
if (survivors) {
  survivors.connect();
  // the Node 20 typings lack the two include* options (the protocol has them)
  await survivors.post("HeapProfiler.startSampling", { samplingInterval: 1024, includeObjectsCollectedByMinorGC: false, includeObjectsCollectedByMajorGC: true } as object);
}
const ac = spawn(process.execPath, ["node_modules/autocannon/autocannon.js", "-c", conns, "-d", secs, "-m", "POST", "-H", `authorization=Bearer ${k.secret}`, "-H", "content-type=application/json", "-b", body, `${env.url}/v1/chat/completions`], { stdio: "inherit" });
await new Promise((r) => ac.on("exit", r));
if (survivors) writeFileSync(process.env.SURVIVORS!, JSON.stringify((await survivors.post("HeapProfiler.stopSampling")).profile));
await env.stop();
up.proc.kill();
process.exit(0);
