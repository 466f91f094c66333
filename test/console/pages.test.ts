// The console's agents, MCP, models and memory pages in a real browser (Debian's chromium,
// playwright-core), each against the real thing: tasks dispatched to an agent (one asks for a
// clarification, answered in the page; another cancelled in the page), an MCP server over stdio
// (test/mcp/fixtures/tiny-server.mjs), the generated GGUF model holding a lease, and an agent's
// memory after an ingest. With SVC_CONSOLE_SCREENSHOTS=<dir> each page is saved there as a PNG
// (docs/console/ holds the committed ones).
import { describe, it, expect, afterAll, beforeAll } from "vitest";
import path from "node:path";
import { mkdirSync } from "node:fs";
import type { Page } from "playwright-core";
import { startMemEnv, type MemEnv } from "../memory/env";
import { lastTool } from "../agents/scripted";
import { pollTask } from "../helpers/tasks";
import { until } from "../helpers/http";
import { node, tiny } from "../mcp/helpers";
import { ensureTinyModel } from "../../engines/inference";
import { haveChromium, openBrowser, type TestBrowser } from "./browser";

const required = process.env.SVC_REQUIRE_SERVICES === "1";
const skip = !haveChromium && !required;
if (skip) console.warn("test/console/pages.test.ts skipped: /usr/bin/chromium is missing (apt-get install chromium)");
const shots = process.env.SVC_CONSOLE_SCREENSHOTS;

let env: MemEnv;
let b: TestBrowser;
let page: Page;

async function shot(name: string) {
  if (!shots) return;
  mkdirSync(shots, { recursive: true });
  await page.screenshot({ path: path.join(shots, `${name}.png`) });
}

async function go(hash: string, heading: string) {
  await page.goto(`${env.url}/console/?at=${Date.now()}#/${hash}`);
  await page.getByRole("heading", { name: heading, exact: true }).waitFor();
}

async function dispatch(agent: string, prompt: string): Promise<string> {
  const r = await env.api("POST", `/agents/${agent}/dispatch`, { prompt, title: prompt });
  if (r.status !== 202) throw new Error(`dispatch: ${r.status} ${JSON.stringify(r.json)}`);
  return r.json.id;
}

const readyOf = (kind: string, name: string) => env.svc.svc.store.get(kind, name)?.status.conditions?.find((c) => c.type === "Ready");

describe.skipIf(skip)("the console's agents, MCP, models and memory pages", () => {
  beforeAll(async () => {
    env = await startMemEnv(["asks", "keeper"]);
    env.up.script("asks", (body, turn) => (turn === 0 ? { calls: [{ name: "clarify", args: { question: "Which city?" } }] } : { text: `forecast for ${lastTool(body)}: sunny` }));
    await env.apply([{ kind: "Agent", name: "asks", spec: { instructions: "Ask before answering.", defaultModel: "asks", maxIterations: 4, description: "asks which city" } }]);
    await env.agent("keeper");
    // memory: one conversation distilled into a fact and an episode
    const ing = await env.ingest({ agent_id: "keeper", conversation_id: "garden", turns: [{ user: "remember that the tomatoes ripen in July", assistant: "Noted." }], flush: true });
    expect(ing.json).toMatchObject({ outcome: "distilled" });
    // a real MCP server over stdio
    await env.apply([{ kind: "McpServer", name: "tiny", spec: { transport: "stdio", command: node, args: [tiny] } }]);
    // the generated GGUF as a local model
    await ensureTinyModel(env.svc.svc.modelsDir);
    await env.apply([{ kind: "Model", name: "tiny-local", spec: { file: "svc-tiny.gguf", threads: 1, contextSize: 8192, parallel: 2, idleUnloadSeconds: 600 } }]);
    await until(() => readyOf("McpServer", "tiny")?.reason === "Connected" && readyOf("Model", "tiny-local")?.status === "True", 30_000);
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
  });

  it("lists tasks live; a clarification is answered in the page and the task completes", async () => {
    await go("agents", "Agents and tasks");
    await page.getByRole("cell", { name: "asks which city" }).waitFor();
    const id = await dispatch("asks", "weather tomorrow?");
    // the list polls: the new task appears, then reaches input_required, without a reload
    const row = page.getByTestId("task-table").getByRole("row", { name: new RegExp(id) });
    await expect.poll(() => row.textContent(), { timeout: 15_000 }).toContain("input_required");
    expect(await row.textContent()).toContain("weather tomorrow?");
    await row.click();
    const detail = page.getByTestId("task-detail");
    await expect.poll(() => detail.getByTestId("pending").textContent()).toContain("Which city?");
    await shot("agents");
    await detail.getByLabel("Answer the clarification").fill("Lisbon");
    await detail.getByRole("button", { name: "Send answer" }).click();
    await expect.poll(() => detail.getByTestId("task-result").textContent(), { timeout: 15_000 }).toBe("forecast for Lisbon: sunny");
    await expect.poll(() => row.textContent(), { timeout: 15_000 }).toContain("completed");
    // the steps show the question's answer
    await expect.poll(() => detail.getByRole("row", { name: /answered: Lisbon/ }).count()).toBe(1); // the steps list refreshes on its own poll
    expect((await pollTask(env, id, (t) => t.status === "completed")).result.output).toBe("forecast for Lisbon: sunny");
  });

  it("cancels a task from the page after a confirmation", async () => {
    await go("agents", "Agents and tasks");
    const id = await dispatch("asks", "cancel me");
    const row = page.getByTestId("task-table").getByRole("row", { name: new RegExp(id) });
    await expect.poll(() => row.textContent(), { timeout: 15_000 }).toContain("input_required");
    await row.click();
    const detail = page.getByTestId("task-detail");
    await detail.getByRole("button", { name: "Cancel task…" }).click();
    await detail.getByRole("button", { name: "Yes, cancel" }).click();
    await expect.poll(() => detail.getByRole("heading").first().textContent()).toContain("cancelled");
    await expect.poll(() => row.textContent(), { timeout: 15_000 }).toContain("cancelled");
    expect((await env.api("GET", `/tasks/${id}`)).json).toMatchObject({ status: "cancelled", reason: "cancelled_by_request" });
    // the status filter narrows the list
    await page.getByLabel("Status").selectOption("cancelled");
    await expect.poll(() => page.getByTestId("task-table").getByRole("row").count()).toBe(2); // header + the cancelled task
  });

  it("shows an MCP server's Ready condition and the tools it exposes", async () => {
    await go("mcp", "MCP servers");
    const row = page.getByTestId("mcp-servers").getByRole("row", { name: /tiny/ });
    await row.waitFor();
    const text = await row.textContent();
    expect(text).toContain("True");
    expect(text).toContain("Connected");
    // read-only tools are exposed by default; "write" (destructive) is not
    expect(text).toMatch(/6 tools \(4 exposed\)/);
    expect(text).toContain("tiny_echo");
    expect(text).not.toContain("tiny_write");
    await page.getByTestId("mcp-tools").getByRole("row", { name: /tiny_echo.*Echo a message/ }).waitFor();
    await shot("mcp");
  });

  it("shows the local model loaded while a generation holds a lease, and released after", async () => {
    const local = () => page.getByTestId("local-models").getByRole("row", { name: /tiny-local/ });
    await go("models", "Models");
    await page.getByRole("cell", { name: "tiny-local" }).first().waitFor();
    // a generation in progress holds a lease until it ends (or the stream is closed): 8000 tokens,
    // several seconds of the tiny model's decoding, longer than the page takes to show it
    const gen = env.svc.svc.engines.pool!.chat({ model: "tiny-local", messages: [{ role: "user", content: "hello" }], maxTokens: 8000, sampling: { temperature: 0 }, stream: true });
    await gen.next();
    await go("models", "Models");
    const cells = async () => (await local().getByRole("cell").allTextContents()).map((s) => s.trim());
    await expect.poll(async () => (await cells()).slice(2, 4)).toEqual(["yes", "1"]); // Loaded, Active leases
    await shot("models");
    await gen.return(undefined);
    await page.getByRole("button", { name: "Refresh" }).click();
    await expect.poll(async () => (await cells()).slice(2, 4)).toEqual(["yes", "0"]);
    expect(Number((await cells())[5])).toBeGreaterThanOrEqual(1); // generations
  });

  it("searches an agent's facts and episodes", async () => {
    await go("memory", "Memory");
    await page.getByLabel("Agent").fill("keeper");
    await page.getByLabel("Search").fill("tomatoes");
    await page.getByLabel("Kind").selectOption("facts");
    await page.getByRole("button", { name: "Search" }).click();
    const hits = page.getByTestId("memory-hits");
    await hits.getByRole("row", { name: /The tomatoes ripen in July\./ }).waitFor();
    expect(await hits.getByRole("row").count()).toBe(2); // header + the fact
    await page.getByLabel("Kind").selectOption("episodes");
    await page.getByRole("button", { name: "Search" }).click();
    await hits.getByRole("row", { name: /episode.*The user talked about remember that the tomatoes ripen in July/ }).waitFor();
    await page.getByLabel("Kind").selectOption("all");
    await page.getByRole("button", { name: "Search" }).click();
    await expect.poll(async () => (await hits.getByRole("row").allTextContents()).join("\n")).toMatch(/fact[\s\S]*episode|episode[\s\S]*fact/);
    await shot("memory");
    expect(b.errors.filter((e) => !/status of (401|403|404|503)/.test(e))).toEqual([]);
  });
});
