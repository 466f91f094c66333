// An upstream Streamable HTTP service that restarts (a deploy) forgets svc's session and drops the
// event stream on which it sends notifications (tools/list_changed). The SDK retries that stream a
// couple of times and then gives up; svc must then reconnect by itself (new session, new event
// stream, tools listed again) rather than go on showing Connected with a dead session, hearing no
// more list_changed and failing the next call.
import type { ChildProcess } from "node:child_process";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestSvc, type TestSvc } from "../helpers/svc";
import { until } from "../helpers/http";
import { apply, call, everything, mcpDoc, reportPort, startChild, waitReason } from "./helpers";

const upstreamArgs = ["--import", reportPort, everything, "streamableHttp"];
const boundPort = /svc-test bound port (\d+)/;

function stop(c: ChildProcess | undefined): Promise<void> {
  if (!c || c.exitCode !== null || c.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    c.once("exit", () => resolve());
    c.kill("SIGKILL");
  });
}

describe("an upstream HTTP service that restarts", () => {
  let s: TestSvc;
  let upstream: ChildProcess | undefined;
  beforeAll(async () => {
    s = await startTestSvc();
  });
  afterAll(async () => {
    await s?.stop();
    await stop(upstream);
  });

  const events = (msg: string) => s.logs.filter((l) => l.msg === msg && l.service === "remote").length;

  it("svc notices the lost event stream, reconnects without waiting for a call, and the next call works", async () => {
    const first = await startChild(upstreamArgs, { PORT: "0" }, boundPort);
    upstream = first.child;
    const port = first.port;
    await apply(s, [mcpDoc("remote", { transport: "http", url: `http://127.0.0.1:${port}/mcp` })]);
    await waitReason(s, "remote", "Connected");
    expect((await call(s, "remote_echo", { message: "before" })).json.result.content[0].text).toBe("Echo: before");
    expect(events("mcp service connected")).toBe(1);

    // the service restarts on the same port: the old session and its event stream are gone
    await stop(upstream);
    upstream = (await startChild(upstreamArgs, { PORT: String(port) }, boundPort)).child;

    // no call is made: svc finds out from the event stream it can no longer reopen
    await until(() => events("mcp service connection lost") >= 1, 45_000, 50);
    await until(() => events("mcp service connected") >= 2 && s.svc.engines.mcp!.state("remote")?.phase === "ready", 45_000, 50);
    const r = await call(s, "remote_echo", { message: "after the restart" });
    expect(r.status).toBe(200);
    expect(r.json.result.content[0].text).toBe("Echo: after the restart");
  }, 120_000);
});
