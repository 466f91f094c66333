// Dev tool (not a test): where the gateway's added latency goes. node --import tsx bench/dev/gateway-latency.ts
import { Cancellation } from "../../engines/chat/cancel";
import { startEnv, standIn, provider } from "../../test/gateway/fixtures";
import { request } from "undici";
const up = await standIn();
const env = await startEnv();
await env.apply([provider("up", up, [{ name: "gpt-x", inputPerMillion: 1, outputPerMillion: 2 }])]);
await env.apply([{ kind: "AccessPolicy", name: "p", spec: { version: "2024-01-01", statements: [{ effect: "Allow", actions: ["*"], resources: ["model:gpt-*"] }, { effect: "Deny", actions: ["*"], resources: ["model:x"] }] } }]);
const k = await env.key({ rate_limits: { per_minute: 1e9 }, budget_limits: { daily: 1e6 }, token_limits: { daily: 1e12 }, policies: ["p"] });
const bodyObj = { model: "gpt-x", messages: [{ role: "user", content: "hi" }] };
const body = JSON.stringify(bodyObj);
const hdr = { authorization: "Bearer " + k.secret, "content-type": "application/json" };
const pct = (a: number[], p: number) => a.sort((x, y) => x - y)[Math.floor(a.length * p)];
async function time(n: number, f: () => Promise<unknown>) {
  const ts: number[] = [];
  for (let i = 0; i < n; i++) {
    const t = performance.now();
    await f();
    ts.push(performance.now() - t);
  }
  return `p50 ${pct(ts, 0.5).toFixed(3)} p99 ${pct(ts, 0.99).toFixed(3)}`;
}
const caller = { token: k.secret, ip: "127.0.0.1", loopback: true, requestId: "r", route: "/v1/chat/completions" };
const req = { model: "gpt-x", messages: [{ role: "user" as const, content: "hi" }], sampling: {}, stream: false };
for (let round = 0; round < 3; round++) {
  console.log("direct   ", await time(2000, async () => (await request(up.baseUrl + "/chat/completions", { method: "POST", headers: hdr, body })).body.text()));
  console.log("pipeline ", await time(2000, async () => { const s = await env.gw.pipeline.chat(caller, req, new Cancellation()); for await (const _ of s.events); }));
  console.log("via http ", await time(2000, async () => (await request(env.url + "/v1/chat/completions", { method: "POST", headers: hdr, body })).body.text()));
}
await env.stop();
await up.close();
process.exit(0);
