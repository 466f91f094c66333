// Image jobs across replicas sharing PostgreSQL: a cancel that lands on another replica than the
// one running the call still aborts it; a replica that starts leaves the image calls running on
// the others alone; a replica that stops marks its own running calls interrupted. And a known
// price is reserved in the shared store: concurrent images on two replicas serve what fits.
import { describe, it, expect, beforeAll, afterAll } from "vitest";
import { missingServices } from "../helpers/services";
import { until } from "../helpers/http";
import { mediaStandin } from "../media/standin";
import { startCluster, startReplica, everywhere, clusterKey, type Replica } from "./cluster";

const missing = missingServices();
if (missing) console.warn(`test/scale skipped: ${missing}`);

const CRED = "media-scale-secret";

describe.skipIf(!!missing)("image jobs across replicas", () => {
  let rs: Replica[] = [];
  let stop: (() => Promise<void>) | undefined;
  let up: Awaited<ReturnType<typeof mediaStandin>> | undefined;

  const startImage = (r: Replica, jobId: string) =>
    fetch(`${r.url}/v1/images/generations`, {
      method: "POST",
      headers: { "content-type": "application/json", "x-svc-job-id": jobId },
      body: JSON.stringify({ model: "slow-image", prompt: "x" }),
    }).then((res) => res.status, () => "connection ended");
  // through the first replica in rs (the test takes a stopped one out)
  const job = (id: string) => rs[0].svc.svc.db.prisma.mediaJob.findUnique({ where: { id } });
  const slowSeen = () => up!.seen.filter((x) => x.body.toString().includes("slow-image")).length;

  beforeAll(async () => {
    process.env.SVC_TEST_MEDIA_CRED = CRED;
    up = await mediaStandin(CRED);
    ({ rs, stop } = await startCluster(2));
    const spec = { type: "openai", baseUrl: up.baseUrl, credential: "env:SVC_TEST_MEDIA_CRED", capabilities: ["image_generation"], models: [{ name: "slow-image" }, { name: "gpt-image-1", perImage: 0.04 }] };
    await rs[0].svc.svc.store.write([{ op: "upsert", kind: "Provider", name: "media-up", owner: "config:test", spec }]);
    await everywhere(rs, "Provider", "media-up");
  }, 120_000);

  afterAll(async () => {
    await stop?.();
    await up?.close();
    delete process.env.SVC_TEST_MEDIA_CRED;
  });

  it("a cancel sent to another replica aborts the call where it runs", async () => {
    const call = startImage(rs[0], "scale-slow-1");
    await until(() => slowSeen() === 1, 10_000);
    const c = await rs[1].api("POST", "/v1/images/cancel", { id: "scale-slow-1" });
    expect(c.status).toBe(200);
    expect(c.json).toMatchObject({ id: "img_scale-slow-1", status: "cancelled" });
    expect(await call).toBe(409); // the caller of the aborted call is told it was cancelled
    await until(() => up!.slowAborted(), 10_000);
    expect(await job("img_scale-slow-1")).toMatchObject({ status: "cancelled" });
    // cancelled once: a second cancel, on any replica, is a conflict
    expect((await rs[0].api("POST", "/v1/images/cancel", { id: "scale-slow-1" })).status).toBe(409);
    expect((await rs[1].api("POST", "/v1/images/cancel", { id: "scale-slow-1" })).status).toBe(409);
  }, 30_000);

  it("20 concurrent images at 0.04 on a 0.10 budget, on two replicas: exactly 2 served and 2 sent upstream", async () => {
    const k = await clusterKey(rs, { budget_limits: { total: 0.1, currency: "USD" } });
    const sent = () => up!.seen.filter((x) => x.body.toString().includes("gpt-image-1")).length;
    const before = sent();
    const statuses = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        fetch(`${rs[i % 2].url}/v1/images/generations`, { method: "POST", headers: { "content-type": "application/json", authorization: `Bearer ${k.secret}` }, body: JSON.stringify({ model: "gpt-image-1", prompt: "a cat" }) }).then(
          async (res) => [res.status, res.status === 200 ? "" : ((await res.json()) as any).error.code],
        ),
      ),
    );
    expect(statuses.filter(([s]) => s === 200)).toHaveLength(2);
    expect(statuses.filter(([s, code]) => s === 402 && code === "budget_exceeded")).toHaveLength(18);
    expect(sent() - before).toBe(2);
  }, 60_000);

  it("a replica starting leaves another's running call alone; the replica stopping marks it interrupted", async () => {
    const call = startImage(rs[0], "scale-slow-2");
    await until(() => slowSeen() === 2, 10_000);
    rs.push(await startReplica()); // its start-up recovery runs now
    expect(await job("img_scale-slow-2")).toMatchObject({ status: "running" });
    const stopping = rs[0];
    rs = rs.slice(1);
    await stopping.svc.stop();
    expect(await call).not.toBe(200);
    expect(await job("img_scale-slow-2")).toMatchObject({ status: "failed", error: "interrupted" }); // read through a replica still running
  }, 60_000);
});
