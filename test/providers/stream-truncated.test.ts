// An OpenAI-compatible upstream whose stream ends cleanly but early (no finish_reason, no [DONE]:
// a proxy or server that gave up on the answer) is a failed answer, as a broken connection is: the
// client's stream ends with an error after the text that came, the audit says upstream_error, and
// the response cache keeps nothing (docs/cache.md: an answer cut short is never stored).
import { describe, it, expect, beforeAll, afterAll } from "vitest";
import { startEnv, standIn, provider, type Env, type StandIn } from "../gateway/fixtures";

describe("an upstream stream that ends before its answer", () => {
  let env: Env;
  let up: StandIn;

  beforeAll(async () => {
    up = await standIn();
    env = await startEnv();
    await env.apply([provider("p", up, [{ name: "cut", upstreamName: "mode:truncated", cache: {} } as never, { name: "whole", cache: {} } as never])]);
  });
  afterAll(async () => {
    await env?.stop();
    await up?.close();
  });

  const stream = async (key: string, model: string) => {
    const s = await env.client(key).chat.completions.create({ model, messages: [{ role: "user", content: "a b c" }], stream: true });
    let text = "";
    let finish: string | null | undefined;
    let failed = false;
    try {
      for await (const ch of s) {
        text += ch.choices[0]?.delta?.content ?? "";
        finish = ch.choices[0]?.finish_reason ?? finish;
      }
    } catch {
      failed = true;
    }
    return { text, finish, failed };
  };

  it("ends the client's stream with an error, is audited upstream_error, and is not cached", async () => {
    const k = await env.key();
    const n = up.requests.length;
    const first = await stream(k.secret, "cut");
    expect(first).toMatchObject({ text: "echo: a b c", failed: true });
    expect(first.finish ?? null).toBeNull(); // never a finish_reason for an answer that did not finish
    const page = await env.gw.audit.query({ keyIds: [k.id] });
    expect(page.data[0].status).toBe("upstream_error");
    const again = await stream(k.secret, "cut");
    expect(again.failed).toBe(true);
    expect(up.requests.length - n).toBe(2); // the second went upstream again: nothing was cached
  });

  it("a whole stream still finishes and is cached", async () => {
    const k = await env.key();
    const n = up.requests.length;
    expect(await stream(k.secret, "whole")).toMatchObject({ text: "echo: a b c", finish: "stop", failed: false });
    expect(await stream(k.secret, "whole")).toMatchObject({ text: "echo: a b c", finish: "stop", failed: false });
    expect(up.requests.length - n).toBe(1);
  });
});
