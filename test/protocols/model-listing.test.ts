// Model listings (/v1/models, /api/tags, /v1/tags) show only what can be served now: not the
// models of a Provider whose credential reference does not resolve, nor a Model whose file is
// missing. A Provider of type ollama works with Ollama's own address and with its /v1 address.
import { copyFile, rm } from "node:fs/promises";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import OpenAI from "openai";
import { Ollama } from "ollama";
import { MODEL, startProtocolSvc, waitFor, type ProtocolSvc, openaiClient } from "./harness";
import { standIn, type StandIn } from "./standins";

let t: ProtocolSvc;
let atV1: StandIn;
let atRoot: StandIn;
let openai: OpenAI;
let ollama: Ollama;
const VAR = "SVC_TEST_LISTING_CREDENTIAL";

const provider = (name: string, spec: string) => `apiVersion: svc/v1\nkind: Provider\nmetadata: {name: ${name}}\nspec: ${spec}\n`;

beforeAll(async () => {
  delete process.env[VAR];
  atV1 = await standIn({ prefix: "/v1" });
  atRoot = await standIn({ prefix: "" });
  t = await startProtocolSvc([
    // Ollama's own address (no /v1): svc appends /v1
    provider("ollama-root", `{type: ollama, baseUrl: "${atV1.origin}", models: [{name: llama-root}]}`),
    provider("ollama-v1", `{type: ollama, baseUrl: "${atV1.origin}/v1/", models: [{name: llama-v1}]}`),
    // an OpenAI-compatible server mounted at the root keeps its base URL as given
    provider("openai-root", `{type: openai, baseUrl: "${atRoot.origin}", models: [{name: gpt-root}]}`),
    provider("keyless", `{type: openai, baseUrl: "${atV1.baseUrl}", credential: "env:${VAR}", models: [{name: gpt-keyless}]}`),
    `apiVersion: svc/v1\nkind: Model\nmetadata: {name: ghost}\nspec: {file: missing.gguf, threads: 1}\n`,
  ]);
  openai = openaiClient(t);
  ollama = new Ollama({ host: t.url });
});
afterAll(async () => {
  delete process.env[VAR];
  await t?.stop();
  await atV1?.close();
  await atRoot?.close();
});

const openaiIds = async () => (await openai.models.list()).data.map((m) => m.id).sort();
const tagNames = async () => (await ollama.list()).models.map((m) => m.name).sort();
const v1Tags = async () => ((await (await fetch(`${t.url}/v1/tags`)).json()) as any).models.map((m: any) => m.name).sort();

describe("model listings", () => {
  it("leave out a Provider with a missing credential and a Model with a missing file", async () => {
    const want = ["gpt-root", "llama-root", "llama-v1", MODEL, "tiny-idle"].sort();
    expect(await openaiIds()).toEqual(want);
    expect(await tagNames()).toEqual(want);
    expect(await v1Tags()).toEqual(want);
  });

  it("list the provider's models once its credential resolves", async () => {
    process.env[VAR] = "sk-upstream-test";
    try {
      expect(await openaiIds()).toContain("gpt-keyless");
      expect(await tagNames()).toContain("gpt-keyless");
      const r = await openai.chat.completions.create({ model: "gpt-keyless", messages: [{ role: "user", content: "hi" }] });
      expect(r.choices[0].message.content).toBe("echo: hi");
    } finally {
      delete process.env[VAR];
    }
    expect(await openaiIds()).not.toContain("gpt-keyless");
  });

  it("drop a local model when its file goes away", async () => {
    const copy = path.join(t.svc.modelsDir, "copy.gguf");
    await copyFile(path.join(t.svc.modelsDir, "svc-tiny.gguf"), copy);
    await t.svc.store.write([{ op: "upsert", kind: "Model", name: "vanishing", owner: "config:test", spec: { file: "copy.gguf", threads: 1 } }]);
    await waitFor(async () => (await openaiIds()).includes("vanishing"));
    expect(await tagNames()).toContain("vanishing");
    await rm(copy);
    expect(await openaiIds()).not.toContain("vanishing");
    expect(await tagNames()).not.toContain("vanishing");
  });
});

describe("Provider type ollama", () => {
  it("reaches Ollama's /v1 API from its own address and from the /v1 address", async () => {
    const before = atV1.requests.length;
    for (const model of ["llama-root", "llama-v1"]) {
      const r = await openai.chat.completions.create({ model, messages: [{ role: "user", content: `to ${model}` }] });
      expect(r.choices[0].message.content).toBe(`echo: to ${model}`);
    }
    const paths = atV1.requests.slice(before).map((r) => r.path);
    expect(paths).toEqual(["/v1/chat/completions", "/v1/chat/completions"]);
  });

  it("streams through Ollama's own address, with the ollama client", async () => {
    let text = "";
    for await (const part of await ollama.chat({ model: "llama-root", messages: [{ role: "user", content: "streamed" }], stream: true })) text += part.message.content;
    expect(text).toBe("echo: streamed");
  });

  it("leaves an openai base URL without /v1 as it is", async () => {
    const r = await openai.chat.completions.create({ model: "gpt-root", messages: [{ role: "user", content: "root" }] });
    expect(r.choices[0].message.content).toBe("echo: root");
    expect(atRoot.requests.at(-1)!.path).toBe("/chat/completions");
  });
});
