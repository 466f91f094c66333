// Log lines of the metrics area: the access line of a /metrics scrape names the key it was made
// with (docs/operations.md: keyId is absent only for anonymous loopback requests and refused
// keys), and the logger's redaction of secret-looking fields holds at any depth.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startEnv, type Env } from "../gateway/fixtures";
import { until } from "../helpers/http";
import { jsonLogger } from "../../api/log";

describe("the access line of GET /metrics", () => {
  let env: Env;
  beforeAll(async () => {
    env = await startEnv();
  });
  afterAll(async () => {
    await env?.stop();
  });

  /** the access line of the request that answered with this X-Request-Id */
  async function accessLine(headers: Record<string, string>): Promise<Record<string, any>> {
    const r = await fetch(`${env.url}/metrics`, { headers });
    expect(r.status).toBe(200);
    await r.text();
    const id = r.headers.get("x-request-id");
    let line: Record<string, any> | undefined;
    await until(() => (line = env.svc.logs.find((l) => l.msg === "request" && l.requestId === id)) !== undefined, 10_000);
    return line!;
  }

  it("has the keyId of the administrative key Prometheus scrapes with", async () => {
    const line = await accessLine({ authorization: `Bearer ${env.adminKey}` });
    expect(line.route).toBe("/metrics");
    expect(line.status).toBe(200);
    expect(line.keyId).toBe("admin");
    expect(JSON.stringify(line)).not.toContain(env.adminKey);
  });

  it("has the keyId of an ordinary key sent on loopback", async () => {
    const key = await env.key({ name: "scraper" });
    const line = await accessLine({ authorization: `Bearer ${key.secret}` });
    expect(line.keyId).toBe(key.id);
    expect(JSON.stringify(line)).not.toContain(key.secret);
  });

  it("has no keyId for an anonymous loopback scrape", async () => {
    const line = await accessLine({});
    expect(line.status).toBe(200);
    expect("keyId" in line).toBe(false);
  });
});

describe("log redaction", () => {
  it("replaces secret-looking fields however deep they are nested", () => {
    const lines: string[] = [];
    const log = jsonLogger({ write: (l) => lines.push(l) });
    let deep: Record<string, unknown> = { password: "hunter2-deep", api_key: "abc123-deep", note: "kept" };
    for (let i = 0; i < 10; i++) deep = { [`level${i}`]: deep };
    log.warn("something failed", { detail: deep, password: "hunter2-top" });
    expect(lines).toHaveLength(1);
    const line = lines[0];
    JSON.parse(line); // still one JSON object
    expect(line).not.toContain("hunter2");
    expect(line).not.toContain("abc123-deep");
    expect(line).toContain("level9"); // the shallow structure is still shown
  });
});
