// The official `ollama` client manages models through svc: pull (streamed progress objects as
// Ollama sends them) from a loopback stand-in of the Hugging Face hub, chat with the pulled name,
// /api/ps, delete (the Model and its files go). Administration: loopback or the admin key.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { existsSync } from "node:fs";
import path from "node:path";
import { Ollama } from "ollama";
import { startTestSvc, type TestSvc } from "../helpers/svc";
import { startHub, type HubStandin } from "./hub-standin";
import { generatedGguf, waitUntil } from "./helpers";

const NAME = "hf.co/svc-test/tiny-GGUF:Q8_0";
let hub: HubStandin;
let t: TestSvc;
let tiny: Buffer;
let client: Ollama;
const prevEndpoint = process.env.SVC_HF_ENDPOINT;

beforeAll(async () => {
  [hub, tiny] = await Promise.all([startHub(), generatedGguf("tiny")]);
  hub.files.set("svc-test/tiny-GGUF/tiny.Q8_0.gguf", { bytes: tiny });
  hub.manifests.set("svc-test/tiny-GGUF:Q8_0", "tiny.Q8_0.gguf");
  process.env.SVC_HF_ENDPOINT = hub.url;
  t = await startTestSvc();
  client = new Ollama({ host: t.url });
});
afterAll(async () => {
  if (prevEndpoint === undefined) delete process.env.SVC_HF_ENDPOINT;
  else process.env.SVC_HF_ENDPOINT = prevEndpoint;
  await t?.stop();
  await hub?.close();
});

describe("ollama pull / delete through svc", () => {
  it("pulls with streamed progress (two pulls share one download), then chats with the pulled name and lists it in /api/ps", async () => {
    type Progress = { status: string; total?: number; completed?: number };
    const collect = async (into: Progress[]) => {
      for await (const p of await client.pull({ model: NAME, stream: true })) into.push(p);
    };
    const seen: Progress[] = [];
    const second: Progress[] = [];
    hub.holdAt = 128 * 1024; // the transfer waits part-way, so the second pull joins it mid-flight
    const first = collect(seen);
    await waitUntil("the first pull downloading", async () => seen.some((p) => p.status === "downloading" && (p.completed ?? 0) > 0));
    const joined = collect(second);
    await waitUntil("the second pull downloading", async () => second.some((p) => p.status === "downloading"));
    hub.release();
    await Promise.all([first, joined]);
    // one download: the stand-in sent the file's bytes once, and both pulls saw it to the end
    expect(hub.sent.get("svc-test/tiny-GGUF/tiny.Q8_0.gguf")).toBe(tiny.length);
    expect(second.find((p) => p.status === "downloading")!.completed).toBeGreaterThan(0);
    expect(second.at(-1)!.status).toBe("success");
    const statuses = seen.map((p) => p.status);
    expect(statuses[0]).toBe("pulling manifest");
    expect(statuses).toContain("verifying sha256 digest");
    expect(statuses.at(-1)).toBe("success");
    const downloading = seen.filter((p) => p.status === "downloading");
    expect(downloading.length).toBeGreaterThan(0);
    expect(downloading.every((p) => p.total === tiny.length)).toBe(true);
    expect(downloading.at(-1)!.completed).toBe(tiny.length);

    const r = await client.chat({ model: NAME, messages: [{ role: "user", content: "hi" }], options: { num_predict: 3, temperature: 0 } });
    expect(r.message.content.length).toBeGreaterThan(0);
    const ps = await client.ps();
    expect(ps.models.map((m) => m.name)).toContain("svc-test-tiny-gguf-q8_0");

    // a second pull of what is on disk and unchanged at the hub fetches nothing again
    const before = hub.sent.get("svc-test/tiny-GGUF/tiny.Q8_0.gguf");
    const again = await client.pull({ model: NAME, stream: false });
    expect(again.status).toBe("success");
    expect(hub.sent.get("svc-test/tiny-GGUF/tiny.Q8_0.gguf")).toBe(before);
  });

  it("refuses a key that is not the administrative key, and names the forms it pulls", async () => {
    const keyed = new Ollama({ host: t.url, headers: { authorization: "Bearer sk-not-a-key" } });
    await expect(keyed.pull({ model: NAME })).rejects.toMatchObject({ status_code: 401 });
    await expect(client.pull({ model: "llama3.2" })).rejects.toThrow(/hf\.co\/<user>\/<repo>:<quant>/);
  });

  it("deletes the pulled model and its files", async () => {
    const file = path.join(t.svc.modelsDir, "hf_svc-test_tiny.Q8_0.gguf");
    expect(existsSync(file)).toBe(true);
    await client.delete({ model: NAME });
    expect(existsSync(file)).toBe(false);
    expect(t.svc.store.get("Model", "svc-test-tiny-gguf-q8_0")).toBeUndefined();
    await expect(client.delete({ model: NAME })).rejects.toMatchObject({ status_code: 404 });
    // audited under the admin actions
    const actions = await waitAudit(t);
    expect(actions).toEqual(expect.arrayContaining(["models.pull", "models.delete"]));
  });
});

/** The models.* audit entries, once the background flush wrote both actions. */
async function waitAudit(s: TestSvc): Promise<string[]> {
  const audit = s.svc.engines.gateway!.audit;
  return waitUntil("audit entries", async () => {
    await audit.flush();
    const actions = (await audit.query({ action: "models" })).data.map((e) => e.action);
    return actions.includes("models.pull") && actions.includes("models.delete") ? actions : undefined;
  }, 10_000).catch(() => []);
}
