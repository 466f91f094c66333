// Console regressions found in review, in a real browser (Debian's chromium, playwright-core):
// - "Save limits" on the Keys page must change only the limit the form shows: the API merge-patches
//   rate_limits, budget_limits and token_limits (RFC 7396), and the page used to send `null` for an
//   empty field (deleting the whole object: a per_day rate limit, a monthly token limit) and the
//   budget's currency as "USD" (overwriting the key's own currency).
// - the audit log's "Filter" button must read the log again when pressed with the same filters
//   (it is the page's only way to see newer entries); so must the usage page's "Show" button.
import { describe, it, expect, afterAll, beforeAll } from "vitest";
import type { Page } from "playwright-core";
import { startEnv, standIn, provider, type Env, type StandIn } from "../gateway/fixtures";
import { haveChromium, openBrowser, type TestBrowser } from "./browser";

const skip = !haveChromium && process.env.SVC_REQUIRE_SERVICES !== "1";

let env: Env;
let up: StandIn;
let b: TestBrowser;
let page: Page;

async function go(hash: string, heading: string) {
  await page.goto(`${env.url}/console/?at=${Date.now()}#/${hash}`);
  await page.getByRole("heading", { name: heading, exact: true }).waitFor();
}

describe.skipIf(skip)("console regressions", () => {
  beforeAll(async () => {
    up = await standIn();
    env = await startEnv();
    await env.apply([provider("up", up, [{ name: "gpt-x", inputPerMillion: 1, outputPerMillion: 2 }])]);
    b = await openBrowser();
    page = b.page;
    await page.goto(`${env.url}/console/`);
    await page.getByLabel("API key").fill(env.adminKey);
    await page.getByRole("button", { name: "Sign in" }).click();
    await page.getByRole("heading", { name: "Overview" }).waitFor();
  }, 120_000);
  afterAll(async () => {
    await b?.close();
    await env?.stop();
    await up?.close();
  });

  it("Save limits changes the edited limit only: the key's other limits stay", async () => {
    const { id } = await env.key({
      name: "limited key",
      rate_limits: { per_day: 1000 }, // no per_minute: the form's field is empty
      budget_limits: { monthly: 5, daily: 1, currency: "USD" },
      token_limits: { monthly: 2_000_000 }, // no daily: the form's field is empty
    });
    await go("keys", "API keys");
    await page.getByRole("cell", { name: "limited key" }).click();
    await page.getByTestId("key-detail").getByRole("button", { name: "Edit limits" }).click();
    const form = page.getByRole("form", { name: "Limits of limited key" });
    await form.getByLabel("Monthly budget (USD)").fill("7");
    await form.getByRole("button", { name: "Save limits" }).click();
    await expect.poll(async () => (await env.api("GET", `/v1/api-keys/${id}`)).json.budget_limits?.monthly).toBe(7);
    const k = (await env.api("GET", `/v1/api-keys/${id}`)).json;
    expect(k.rate_limits).toEqual({ per_day: 1000 });
    expect(k.token_limits).toEqual({ monthly: 2_000_000 });
    expect(k.budget_limits).toEqual({ monthly: 7, daily: 1, currency: "USD" });

    // clearing a field removes that limit alone
    await page.getByTestId("key-detail").getByRole("button", { name: "Edit limits" }).click();
    await form.getByLabel("Monthly budget (USD)").fill("");
    await form.getByLabel("Requests / minute").fill("30");
    await form.getByRole("button", { name: "Save limits" }).click();
    await expect.poll(async () => (await env.api("GET", `/v1/api-keys/${id}`)).json.rate_limits).toEqual({ per_day: 1000, per_minute: 30 });
    const k2 = (await env.api("GET", `/v1/api-keys/${id}`)).json;
    expect(k2.budget_limits).toEqual({ daily: 1, currency: "USD" });
    expect(k2.token_limits).toEqual({ monthly: 2_000_000 });
  });

  it("the audit log's Filter button shows entries written since the page loaded", async () => {
    const { id, secret } = await env.key({ name: "audited key" });
    await env.api("GET", "/v1/api-keys", undefined, secret); // one entry of that key
    await go("audit", "Audit log");
    await page.getByLabel("Key id").fill(id);
    await page.getByRole("button", { name: "Filter" }).click();
    const rows = page.getByTestId("audit-table").getByRole("row");
    // the unfiltered table shows until the filtered page lands: header + the one entry
    await expect.poll(() => rows.count()).toBe(2);
    // new traffic of that key, then the same filter again
    await env.api("GET", `/v1/api-keys/${id}`, undefined, secret);
    await env.api("GET", `/v1/api-keys/${id}`, undefined, secret);
    await page.getByRole("button", { name: "Filter" }).click();
    await expect.poll(() => rows.count(), { timeout: 5000 }).toBe(4);
  });

  it("the usage page's Show button shows requests made since the page loaded", async () => {
    const { secret } = await env.key({ name: "usage key" });
    const hi = [{ role: "user" as const, content: "hi" }];
    await env.client(secret).chat.completions.create({ model: "gpt-x", messages: hi });
    await go("usage", "Usage and spend");
    const line = page.getByTestId("usage-table").getByRole("row", { name: /usage key/ });
    await line.waitFor();
    expect(await line.getByRole("cell").nth(2).textContent()).toBe("1"); // Requests
    await env.client(secret).chat.completions.create({ model: "gpt-x", messages: hi });
    await page.getByRole("button", { name: "Show" }).click();
    await expect.poll(() => line.getByRole("cell").nth(2).textContent(), { timeout: 5000 }).toBe("2");
  });
});
