// The console in a real browser (Debian's chromium, playwright-core): sign in, create a key and see
// its secret once, use it through the OpenAI SDK, find the request in the audit log and the usage
// page, revoke it and see the next call refused; a read_only key that can neither create keys nor
// run inference; the config page's plan diff and apply. With SVC_CONSOLE_SCREENSHOTS=<dir> each
// page is also saved there as a PNG (docs/console/ holds the committed ones).
import { describe, it, expect, afterAll, beforeAll } from "vitest";
import path from "node:path";
import { mkdirSync } from "node:fs";
import type { Page } from "playwright-core";
import { startEnv, standIn, provider, expectError, type Env, type StandIn } from "../gateway/fixtures";
import { haveChromium, openBrowser, type TestBrowser } from "./browser";

const required = process.env.SVC_REQUIRE_SERVICES === "1";
const skip = !haveChromium && !required;
if (skip) console.warn("test/console/console.test.ts skipped: /usr/bin/chromium is missing (apt-get install chromium)");
const shots = process.env.SVC_CONSOLE_SCREENSHOTS;

let env: Env;
let up: StandIn;
let b: TestBrowser;
let page: Page;
const hi = [{ role: "user" as const, content: "hi" }];

async function shot(name: string) {
  if (!shots) return;
  mkdirSync(shots, { recursive: true });
  await page.screenshot({ path: path.join(shots, `${name}.png`) });
}

async function go(hash: string, heading: string) {
  // a full load each time (a hash change alone keeps the page's data)
  await page.goto(`${env.url}/console/?at=${Date.now()}#/${hash}`);
  await page.getByRole("heading", { name: heading, exact: true }).waitFor();
}

async function signIn(key: string) {
  await page.goto(`${env.url}/console/`);
  await page.getByLabel("API key").fill(key);
  await page.getByRole("button", { name: "Sign in" }).click();
  await page.getByRole("heading", { name: "Overview" }).waitFor();
}

async function signOut() {
  await page.getByRole("button", { name: "Sign out" }).click();
  await page.getByRole("heading", { name: "Sign in to svc" }).waitFor();
}

describe.skipIf(skip)("the console in a browser", () => {
  beforeAll(async () => {
    up = await standIn();
    env = await startEnv();
    await env.apply([provider("up", up, [{ name: "gpt-x", inputPerMillion: 1, outputPerMillion: 2 }, { name: "gpt-y", inputPerMillion: 3, outputPerMillion: 6 }])]);
    // a manifest-owned key and some traffic, so the pages have something to show
    const { hashSecret, generateSecret } = await import("../../engines/gateway/keys");
    await env.apply([{ kind: "ApiKey", name: "gitops-key", spec: { name: "gitops key", key_type: "user", secretHash: `sha256:${hashSecret(generateSecret())}` } }]);
    const seed = await env.key({ name: "batch jobs", organization_id: "acme", team_id: "data", budget_limits: { monthly: 5, currency: "USD" } });
    for (let i = 0; i < 3; i++) await env.client(seed.secret).chat.completions.create({ model: i % 2 ? "gpt-y" : "gpt-x", messages: hi, metadata: { workflow_id: "nightly" } });
    b = await openBrowser();
    page = b.page;
  }, 120_000);
  afterAll(async () => {
    await b?.close();
    await env?.stop();
    await up?.close();
  });

  it("signs in with a key; the key is in no cookie or web storage", async () => {
    await page.goto(`${env.url}/console/`);
    await shot("sign-in");
    await signIn(env.adminKey);
    await expect.poll(() => page.getByTestId("requests-hour").textContent()).toBe("3");
    await shot("overview");
    const cookies = await b.context.cookies();
    expect(cookies.find((c) => c.name === "svc_console")).toMatchObject({ httpOnly: true, sameSite: "Strict" });
    expect(JSON.stringify(cookies)).not.toContain(env.adminKey);
    // runs in the page (no DOM types in this project's compile)
    const storage = await page.evaluate("JSON.stringify({ ...localStorage }) + JSON.stringify({ ...sessionStorage })");
    expect(storage).not.toContain("sk-svc-");
  });

  let secret = "";
  let keyId = "";
  it("creates a key and shows its secret once; the key works through the OpenAI SDK", async () => {
    await go("keys", "API keys");
    await page.getByLabel("Name", { exact: true }).fill("browser key");
    await page.getByLabel("Requests / minute").first().fill("100");
    await page.getByRole("button", { name: "Create key" }).click();
    secret = (await page.getByTestId("secret-value").textContent()) ?? "";
    expect(secret).toMatch(/^sk-svc-[0-9A-Za-z]{43}$/);
    if (shots) {
      // the committed picture shows no whole secret (even a throwaway one)
      await page.getByTestId("secret-value").evaluate((el, masked) => (el.textContent = masked), `${secret.slice(0, 12)}…`);
      await shot("keys-created");
    }
    await page.getByRole("button", { name: "I have stored it" }).click();
    await expect.poll(() => page.getByTestId("new-secret").count()).toBe(0);
    // the list shows the key but never its secret again
    await page.getByRole("cell", { name: "browser key" }).waitFor();
    expect(await page.content()).not.toContain(secret);
    const out = await env.client(secret).chat.completions.create({ model: "gpt-x", messages: hi, metadata: { workflow_id: "from-browser" } });
    expect(out.choices[0].message.content).toBe("echo: hi");
    keyId = (await env.api("GET", "/v1/api-keys")).json.keys.find((k: any) => k.name === "browser key").id;
  });

  it("shows a manifest-owned key read-only, managed by its source", async () => {
    await go("keys", "API keys");
    await page.getByRole("cell", { name: "gitops key" }).click();
    await expect.poll(() => page.getByTestId("managed").textContent()).toContain("managed by config:test");
    expect(await page.getByTestId("key-detail").getByRole("button", { name: "Revoke…" }).count()).toBe(0);
    await page.getByRole("cell", { name: "batch jobs" }).click();
    await page.getByTestId("key-detail").getByRole("progressbar", { name: /monthly budget/ }).waitFor();
    await shot("keys");
  });

  it("finds the request in the audit log (filtered, with its detail) and in the usage page", async () => {
    await go("audit", "Audit log");
    await page.getByLabel("workflow_id").fill("from-browser");
    await page.getByRole("button", { name: "Filter" }).click();
    const row = page.getByTestId("audit-table").getByRole("row", { name: /browser key/ });
    await row.waitFor();
    // the unfiltered table may still be showing (it holds the row too) until the filtered page lands
    await expect.poll(() => page.getByTestId("audit-table").getByRole("row").count()).toBe(2); // header + the one request
    await row.click();
    await expect.poll(() => page.getByTestId("audit-detail").textContent()).toContain('"workflow_id": "from-browser"');
    await shot("audit");

    await go("usage", "Usage and spend");
    const line = page.getByTestId("usage-table").getByRole("row", { name: /browser key/ });
    await line.waitFor();
    expect(await line.textContent()).toContain(keyId);
    expect(await page.locator("figure.chart canvas").count()).toBeGreaterThan(0);
    const csv = page.getByRole("link", { name: "Download CSV" });
    expect(await csv.getAttribute("href")).toContain("format=csv");
    await shot("usage");
  });

  it("revokes the key after a confirmation; the next call is refused", async () => {
    await go("keys", "API keys");
    await page.getByRole("cell", { name: "browser key" }).click();
    const detail = page.getByTestId("key-detail");
    await detail.getByRole("button", { name: "Revoke…" }).click();
    await detail.getByRole("button", { name: "Yes, revoke" }).click();
    await expect.poll(() => page.getByRole("row", { name: /browser key/ }).textContent()).toContain("revoked");
    await expectError(env.client(secret, { maxRetries: 0 }).chat.completions.create({ model: "gpt-x", messages: hi }), 401, "key_revoked");
  });

  it("plans a pasted document as a diff and applies it", async () => {
    await go("config", "Configuration");
    await page.getByTestId("export").waitFor();
    const doc = [
      "apiVersion: svc/v1", "kind: AccessPolicy", "metadata:", "  name: console-policy", "spec:", "  version: \"2024-01-01\"", "  statements:",
      "    - effect: Allow", "      actions: [\"chat:completions\"]", "      resources: [\"model:gpt-x\"]",
    ].join("\n");
    await page.getByLabel(/Manifest YAML/).fill(doc);
    await page.getByLabel(/Replay recorded traffic/).selectOption("24h");
    await page.getByRole("button", { name: "Plan" }).click();
    const plan = page.getByTestId("plan");
    await plan.waitFor();
    // the replay of the last 24 hours' traffic: a policy bound to no key changes none of it
    expect(await page.getByTestId("replay-summary").textContent()).toMatch(/^Replay: \d+ requests, no differences\./);
    expect(await plan.textContent()).toContain("AccessPolicy/console-policy");
    expect(await plan.textContent()).toContain("1 to create");
    expect(await plan.getByRole("cell", { name: "/spec/statements" }).count()).toBe(1);
    await shot("config");
    await page.getByRole("button", { name: /Apply 1 change/ }).click();
    await page.getByRole("status").filter({ hasText: "Applied 1 change" }).waitFor();
    expect(env.svc.svc.store.get("AccessPolicy", "console-policy")).toBeTruthy();
  });

  // (exercised against real tasks, MCP servers, models and memory in pages.test.ts, which takes their pictures)
  it("renders the agents, MCP, models and memory pages", async () => {
    await go("agents", "Agents and tasks");
    await go("mcp", "MCP servers");
    await go("models", "Models");
    await page.getByRole("cell", { name: "gpt-x" }).first().waitFor();
    await go("memory", "Memory");
    // the API page renders this build's OpenAPI document; a route shows its request body's schema
    await go("api", "API");
    await page.getByRole("cell", { name: "/v1/chat/completions" }).click();
    await page.getByRole("heading", { name: "POST /v1/chat/completions" }).waitFor();
    expect(await page.getByText("Request body (JSON Schema)").count()).toBe(1);
    await shot("api");
    expect(b.errors.filter((e) => !/status of (401|403|404|503)/.test(e))).toEqual([]);
  });

  it("a read_only key can neither create keys nor run inference, whatever the page does", async () => {
    const ro = await env.key({ name: "viewer", access_level: "read_only", key_type: "organization", organization_id: "acme", permissions: { manage_keys: true, view_all_usage: true } });
    await signOut();
    await signIn(ro.secret);
    expect(await page.getByTestId("who").textContent()).toContain("read_only");
    await go("keys", "API keys");
    await page.getByText("This key is read_only").waitFor();
    expect(await page.getByRole("button", { name: "Create key" }).count()).toBe(0);
    // the API refuses it even when asked directly from the signed-in page, CSRF token and all
    const refused: { status: number; body: any } = await page.evaluate(async () => {
      const s: any = await (await fetch("/console/session")).json();
      const r = await fetch("/v1/api-keys", { method: "POST", headers: { "content-type": "application/json", "x-csrf-token": s.csrf }, body: JSON.stringify({ name: "sneaky" }) });
      return { status: r.status, body: await r.json() };
    });
    expect(refused.status).toBe(403);
    expect(refused.body.error).toMatchObject({ code: "permission_denied" });
    expect(refused.body.error.message).toContain("read_only");
    await expectError(env.client(ro.secret, { maxRetries: 0 }).chat.completions.create({ model: "gpt-x", messages: hi }), 403, "permission_denied");
    // it still reads usage: its organization's
    await go("usage", "Usage and spend");
    await page.getByTestId("usage-table").getByRole("row", { name: /batch jobs/ }).waitFor();
  });
});
