// Helpers for crash tests: a loopback OpenAI-style stand-in whose answers can be held, and a
// real `svc serve` child process on a home dir that can be killed with SIGKILL and restarted.
import type { ChildProcess } from "node:child_process";
import { createServer, type Server, type ServerResponse } from "node:http";
import { startServeChild } from "../helpers/serve-child";

/** Answers chat completions with the given usage; `hold()` keeps answers back until `release()`. */
export async function standInUpstream(usage: { prompt: number; completion: number }) {
  let received = 0;
  let holding = false;
  const held: ServerResponse[] = [];
  const answer = (res: ServerResponse) => {
    if (res.destroyed) return;
    res.writeHead(200, { "content-type": "application/json" });
    res.end(JSON.stringify({
      id: "x", object: "chat.completion", created: 1, model: "m",
      choices: [{ index: 0, message: { role: "assistant", content: "ok" }, finish_reason: "stop" }],
      usage: { prompt_tokens: usage.prompt, completion_tokens: usage.completion, total_tokens: usage.prompt + usage.completion },
    }));
  };
  const server: Server = createServer((req, res) => {
    req.resume();
    req.on("end", () => {
      received++;
      if (holding) held.push(res);
      else answer(res);
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const port = (server.address() as { port: number }).port;
  return {
    baseUrl: `http://127.0.0.1:${port}/v1`,
    received: () => received,
    hold: () => (holding = true),
    release: () => {
      holding = false;
      for (const r of held.splice(0)) answer(r);
    },
    close: () => {
      for (const r of held.splice(0)) r.destroy();
      server.closeAllConnections();
      return new Promise<void>((r) => server.close(() => r()));
    },
  };
}

export interface SvcChild {
  url: string;
  child: ChildProcess;
  kill9(): Promise<void>;
  stop(): Promise<void>;
}

/** Start `svc serve` on `home` with the manifests in `cfg`; resolves once it serves. */
export async function startChild(home: string, cfg: string, admin: string): Promise<SvcChild> {
  const s = await startServeChild(["--port", "0", "--config", cfg, "--no-quickstart"], { SVC_HOME: home, SVC_ADMIN_KEY: admin });
  return {
    url: s.url,
    child: s.child,
    kill9: s.kill9,
    stop: async () => {
      await s.stop();
    },
  };
}
