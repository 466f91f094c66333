// Helpers for crash tests: a loopback OpenAI-style stand-in whose answers can be held, and a
// real `svc serve` child process on a home dir that can be killed with SIGKILL and restarted.
import { spawn, type ChildProcess } from "node:child_process";
import { createServer, type Server, type ServerResponse } from "node:http";
import path from "node:path";
import { repoRoot } from "../helpers/cli";
import { until } from "../helpers/http";

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
  const child = spawn(process.execPath, [path.join(repoRoot, "bin", "svc.mjs"), "serve", "--port", "0", "--config", cfg, "--no-quickstart"], {
    env: { ...process.env, SVC_HOME: home, SVC_ADMIN_KEY: admin },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let out = "";
  let err = "";
  child.stdout!.on("data", (d) => (out += d));
  child.stderr!.on("data", (d) => (err += d));
  const exited = new Promise<void>((r) => child.on("close", () => r()));
  await until(() => /svc serving at http/.test(out) || child.exitCode !== null, 60_000);
  const url = out.match(/svc serving at (http:\/\/127\.0\.0\.1:\d+)/)?.[1];
  if (!url) throw new Error(`svc did not start: ${err}`);
  return {
    url,
    child,
    kill9: async () => {
      child.kill("SIGKILL");
      await exited;
    },
    stop: async () => {
      if (child.exitCode === null) child.kill("SIGTERM");
      await exited;
    },
  };
}
