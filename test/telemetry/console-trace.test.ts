// The console's audit page in a real browser (Debian's chromium, playwright-core) shows the trace
// id of an entry made by a traced request: the short id in the table's Trace column, the full id
// in the row's detail, the id that the exported spans carry. Everything on loopback.
import { describe, it, expect, beforeAll, afterAll } from "vitest";
import { startEnv, standIn, provider, type Env, type StandIn } from "../gateway/fixtures";
import { eventually } from "../helpers/http";
import { haveChromium, openBrowser, type TestBrowser } from "../console/browser";
import { otlpReceiver, type Receiver } from "./otlp-receiver";

const skip = !haveChromium && process.env.SVC_REQUIRE_SERVICES !== "1";
if (skip) console.warn("test/telemetry/console-trace.test.ts skipped: /usr/bin/chromium is missing (apt-get install chromium)");

const TRACE = "5b8efff798038103d269b633813fc60c";

describe.skipIf(skip)("the console's audit page shows a traced request's trace id", () => {
  let env: Env;
  let up: StandIn;
  let rx: Receiver;
  let b: TestBrowser;
  const saved = { ...process.env };

  beforeAll(async () => {
    rx = await otlpReceiver();
    Object.assign(process.env, { OTEL_EXPORTER_OTLP_ENDPOINT: rx.url, OTEL_EXPORTER_OTLP_PROTOCOL: "http/protobuf", OTEL_BSP_SCHEDULE_DELAY: "20" });
    up = await standIn();
    env = await startEnv();
    await env.apply([provider("up", up, [{ name: "gpt-x" }])]);
    b = await openBrowser();
  }, 120_000);
  afterAll(async () => {
    await b?.close();
    await env?.stop();
    await up?.close();
    await rx?.close();
    process.env = saved;
  });

  it("the Trace column and the row's detail hold the id the spans were exported with", async () => {
    const k = await env.key({ name: "traced key" });
    // a client continuing its own trace: svc's entry joins it
    const r = await env.client(k.secret).chat.completions.create(
      { model: "gpt-x", messages: [{ role: "user", content: "hi" }], metadata: { workflow_id: "traced-flow" } },
      { headers: { traceparent: `00-${TRACE}-eee19b7ec3c1b174-01` } },
    );
    expect(r.choices[0].message.content).toBe("echo: hi");
    await eventually(async () => rx.spans.some((s) => s.traceId === TRACE && s.name === "chat gpt-x"));

    const page = b.page;
    await page.goto(`${env.url}/console/`);
    await page.getByLabel("API key").fill(env.adminKey);
    await page.getByRole("button", { name: "Sign in" }).click();
    await page.getByRole("heading", { name: "Overview" }).waitFor();
    await page.goto(`${env.url}/console/?at=${Date.now()}#/audit`);
    await page.getByRole("heading", { name: "Audit log", exact: true }).waitFor();
    await page.getByLabel("workflow_id").fill("traced-flow");
    await page.getByRole("button", { name: "Filter" }).click();
    const table = page.getByTestId("audit-table");
    await expect.poll(() => table.getByRole("row").count()).toBe(2); // header + the one request
    await expect.poll(() => table.getByRole("columnheader", { name: "Trace" }).count()).toBe(1);
    const row = table.getByRole("row", { name: /traced key/ });
    await expect.poll(() => row.locator(`code[title="${TRACE}"]`).textContent()).toBe(`${TRACE.slice(0, 8)}…`);
    await row.click();
    await expect.poll(() => page.getByTestId("audit-trace").textContent()).toBe(TRACE);
    expect(b.errors.filter((e) => !/status of (401|403|404|503)/.test(e))).toEqual([]); // the sign-in page probes the session first
  });
});
