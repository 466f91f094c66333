// SIGTERM with streams in flight: a real `svc serve` process, slow upstream streams on every
// protocol when the signal arrives; each client sees its protocol's terminal frame (an error
// event saying the server is stopping; OpenAI then `data: [DONE]`), never a cut socket, and the
// process exits 0.
import { mkdirSync, writeFileSync } from "node:fs";
import path from "node:path";
import OpenAI from "openai";
import Anthropic from "@anthropic-ai/sdk";
import { Ollama } from "ollama";
import { afterAll, describe, expect, it } from "vitest";
import { tempDir } from "../helpers/svc";
import { startServeChild } from "../helpers/serve-child";
import { until } from "../helpers/http";
import { standIn, type StandIn } from "./standins";

let up: StandIn | undefined;
afterAll(async () => up?.close());

/** Raw SSE/NDJSON reader: the frames as they arrive, and how the body ended. */
async function readRaw(res: Response, onChunk: () => void): Promise<{ text: string; ended: "clean" | "cut" }> {
  let text = "";
  const dec = new TextDecoder();
  try {
    for await (const c of res.body as unknown as AsyncIterable<Uint8Array>) {
      text += dec.decode(c, { stream: true });
      onChunk();
    }
    return { text, ended: "clean" };
  } catch {
    return { text, ended: "cut" };
  }
}

describe("SIGTERM during streams", () => {
  it("ends every protocol's stream with a terminal frame", async () => {
    up = await standIn();
    const home = await tempDir("svc-shutdown-");
    const cfg = path.join(home, "cfg");
    mkdirSync(cfg);
    writeFileSync(path.join(cfg, "p.yaml"), `apiVersion: svc/v1
kind: Provider
metadata: {name: slow-openai}
spec: {type: openai, baseUrl: "${up.baseUrl}", models: [{name: gpt-slow, upstreamName: slow}]}
---
apiVersion: svc/v1
kind: Provider
metadata: {name: slow-anthropic}
spec: {type: anthropic, baseUrl: "${up.origin}", models: [{name: claude-slow, upstreamName: slow}]}
`);
    const { url, child, exited } = await startServeChild(["--port", "0", "--config", cfg, "--no-quickstart"], { SVC_HOME: home });
    try {

      const got = { openaiSdk: 0, openaiRaw: 0, anthropic: 0, ollama: 0 };
      // OpenAI through the official client: the error event surfaces as an APIError
      const openai = new OpenAI({ baseURL: `${url}/v1`, apiKey: "none", maxRetries: 0, defaultHeaders: { authorization: null } });
      const openaiSdk = (async () => {
        const s = await openai.chat.completions.create({ model: "gpt-slow", messages: [{ role: "user", content: "go" }], stream: true });
        for await (const _ of s) got.openaiSdk++;
      })().then(() => "finished", (e) => e);
      // the same stream read raw, to see the frames themselves
      const openaiRaw = fetch(`${url}/v1/chat/completions`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ model: "gpt-slow", messages: [{ role: "user", content: "go" }], stream: true }),
      }).then((r) => readRaw(r, () => got.openaiRaw++));
      const anthropic = new Anthropic({ baseURL: url, apiKey: "none", defaultHeaders: { "x-api-key": null, authorization: null }, maxRetries: 0 });
      const anthropicRun = (async () => {
        const s = await anthropic.messages.create({ model: "claude-slow", max_tokens: 5000, messages: [{ role: "user", content: "go" }], stream: true });
        for await (const _ of s) got.anthropic++;
      })().then(() => "finished", (e) => e);
      const ollama = new Ollama({ host: url });
      const ollamaRun = (async () => {
        for await (const _ of await ollama.chat({ model: "gpt-slow", messages: [{ role: "user", content: "go" }], stream: true })) got.ollama++;
      })().then(() => "finished", (e) => e);

      // every stream is under way (a few frames each) when the signal arrives
      await until(() => Object.values(got).every((n) => n >= 3), 20_000);
      let exitAt = Infinity;
      child.once("exit", () => (exitAt = performance.now()));
      child.kill("SIGTERM");

      const [sdkErr, raw, anthErr, ollErr] = await Promise.all([openaiSdk, openaiRaw, anthropicRun, ollamaRun]);
      expect(await exited).toBe(0);

      expect(sdkErr).toBeInstanceOf(OpenAI.APIError);
      expect(String(sdkErr.message)).toContain("shutting down");

      expect(raw.ended).toBe("clean");
      const frames = raw.text.trim().split(/\n\n/);
      expect(frames.at(-1)).toBe("data: [DONE]");
      expect(JSON.parse(frames.at(-2)!.slice(6)).error.message).toContain("shutting down");

      expect(anthErr).toBeInstanceOf(Anthropic.APIError);
      expect(String(anthErr.message)).toContain("shutting down");

      expect(ollErr).toBeInstanceOf(Error);
      expect(String(ollErr.message)).toContain("shutting down");
      // the upstream streams were cancelled, not left running: each of the four slow upstream
      // calls (60 s of words each) was closed by svc before it finished
      const slow = up!.requests.filter((r) => r.body.model === "slow");
      expect(slow).toHaveLength(4);
      await until(() => slow.every((r) => r.closedEarly), 5_000);
      // ... by svc while it shut down, before its process ended (not by the exit itself)
      for (const r of slow) expect(r.closedAt!).toBeLessThan(exitAt);
    } finally {
      if (child.exitCode === null) child.kill("SIGKILL");
    }
  }, 60_000);
});
