// Anthropic stop_sequences: the answer reports stop_reason "stop_sequence" and which sequence
// matched, streamed and not, for the local GGUF model (node-llama-cpp's stop trigger) and for an
// Anthropic upstream (its own stop_sequence passed through).
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import Anthropic from "@anthropic-ai/sdk";
import { MODEL, startProtocolSvc, type ProtocolSvc } from "./harness";
import { standIn, type StandIn } from "./standins";

let t: ProtocolSvc;
let up: StandIn;
let client: Anthropic;

beforeAll(async () => {
  up = await standIn();
  t = await startProtocolSvc([
    `apiVersion: svc/v1\nkind: Provider\nmetadata: {name: anthro-up}\nspec: {type: anthropic, baseUrl: "${up.origin}", models: [{name: claude-up}]}\n`,
  ]);
  client = new Anthropic({ baseURL: t.url, apiKey: "unused", defaultHeaders: { "x-api-key": null, authorization: null }, maxRetries: 0 });
});
afterAll(async () => {
  await t?.stop();
  await up?.close();
});

type Params = Anthropic.MessageCreateParamsNonStreaming & { temperature?: number };
const params = (p: Params) => p as Anthropic.MessageCreateParamsNonStreaming;
const textOf = (m: Anthropic.Message) => m.content.map((b) => (b.type === "text" ? b.text : "")).join("");

/** A stop sequence that occurs in the model's deterministic output, and the text before it. */
async function pickStop(): Promise<{ seq: string; before: string }> {
  const full = textOf(await client.messages.create(params({ model: MODEL, max_tokens: 40, temperature: 0, messages: [{ role: "user", content: "hello" }] })));
  // a 3-character piece well inside the text, at its first occurrence
  for (let i = 8; i + 3 <= full.length; i++) {
    const seq = full.slice(i, i + 3);
    if (seq.trim().length === 3 && full.indexOf(seq) === i) return { seq, before: full.slice(0, i) };
  }
  throw new Error(`no usable stop sequence in ${JSON.stringify(full)}`);
}

describe("stop_sequences on the local model", () => {
  it("reports stop_sequence and the matched sequence (not streamed)", async () => {
    const { seq, before } = await pickStop();
    const m = await client.messages.create(params({ model: MODEL, max_tokens: 40, temperature: 0, stop_sequences: ["@@never@@", seq], messages: [{ role: "user", content: "hello" }] }));
    expect(m.stop_reason).toBe("stop_sequence");
    expect(m.stop_sequence).toBe(seq);
    expect(textOf(m)).toBe(before);
  });

  it("reports them in message_delta when streamed", async () => {
    const { seq, before } = await pickStop();
    const stream = client.messages.stream(params({ model: MODEL, max_tokens: 40, temperature: 0, stop_sequences: [seq], messages: [{ role: "user", content: "hello" }] }));
    let delta: any;
    for await (const ev of stream) if (ev.type === "message_delta") delta = ev.delta;
    const final = await stream.finalMessage();
    expect(delta).toMatchObject({ stop_reason: "stop_sequence", stop_sequence: seq });
    expect(final.stop_reason).toBe("stop_sequence");
    expect(final.stop_sequence).toBe(seq);
    expect(textOf(final)).toBe(before);
  });

  it("keeps end_turn / max_tokens and a null stop_sequence when no sequence matched", async () => {
    const m = await client.messages.create(params({ model: MODEL, max_tokens: 5, temperature: 0, stop_sequences: ["@@never@@"], messages: [{ role: "user", content: "hello" }] }));
    expect(m.stop_reason).toBe("max_tokens");
    expect(m.stop_sequence).toBeNull();
  });
});

describe("stop_sequences through an Anthropic upstream", () => {
  it("passes the upstream's stop_sequence on (not streamed)", async () => {
    const m = await client.messages.create(params({ model: "claude-up", max_tokens: 20, stop_sequences: ["zz", "brown"], messages: [{ role: "user", content: "the quick brown fox" }] }));
    expect(up.requests.at(-1)!.body.stop_sequences).toEqual(["zz", "brown"]);
    expect(m.stop_reason).toBe("stop_sequence");
    expect(m.stop_sequence).toBe("brown");
    expect(textOf(m)).toBe("echo: the quick ");
  });

  it("passes it on when streamed", async () => {
    const stream = client.messages.stream(params({ model: "claude-up", max_tokens: 20, stop_sequences: ["fox"], messages: [{ role: "user", content: "the quick brown fox jumps" }] }));
    const final = await stream.finalMessage();
    expect(final.stop_reason).toBe("stop_sequence");
    expect(final.stop_sequence).toBe("fox");
    expect(textOf(final)).toBe("echo: the quick brown ");
  });

  it("says end_turn when the upstream ended on its own", async () => {
    const m = await client.messages.create(params({ model: "claude-up", max_tokens: 20, stop_sequences: ["nothing-like-this"], messages: [{ role: "user", content: "hi" }] }));
    expect(m.stop_reason).toBe("end_turn");
    expect(m.stop_sequence).toBeNull();
  });
});
