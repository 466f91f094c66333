// The CLI's tables line up in a terminal whatever the names hold: a key named in CJK, with an
// emoji or with a combining accent takes a different number of columns than its String.length,
// and every later column of its row must still start where the header's does.
import path from "node:path";
import { readFileSync } from "node:fs";
import { writeFile } from "node:fs/promises";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestSvc, tempDir, type TestSvc } from "../helpers/svc";
import { runCli } from "../helpers/cli";
import { eventually, postJson } from "../helpers/http";

/** Terminal columns of the strings these tests use (independent of the CLI's own function). */
function cols(s: string): number {
  let w = 0;
  for (const ch of s) {
    const cp = ch.codePointAt(0)!;
    if (cp >= 0x300 && cp <= 0x36f) continue; // combining accents: no column of their own
    w += (cp >= 0x3000 && cp <= 0x9fff) || (cp >= 0x1f300 && cp <= 0x1faff) ? 2 : 1; // CJK, emoji: two
  }
  return w;
}

/** The terminal column where `token` (searched after `after`) starts in `line`. */
function colOf(line: string, token: string, after = 0): number {
  const i = line.indexOf(token, after);
  expect(i, `${JSON.stringify(token)} in ${JSON.stringify(line)}`).toBeGreaterThanOrEqual(0);
  return cols(line.slice(0, i));
}

const CJK = "日本語のキー";
const MIXED = "cafe\u0301 🔑"; // "café" with a combining accent, and an emoji

let s: TestSvc;
let env: Record<string, string>;
let admin: string;
const ids: Record<string, string> = {};

beforeAll(async () => {
  s = await startTestSvc();
  env = { SVC_HOME: s.home, SVC_PORT: String(s.port), SVC_API_KEY: "", SVC_ADMIN_KEY: "" };
  admin = readFileSync(path.join(s.home, "admin.key"), "utf8").trim();
  for (const name of [CJK, MIXED, "plain"]) {
    const k = await postJson(`${s.url}/v1/api-keys`, { name }, { authorization: `Bearer ${admin}` });
    expect(k.status, k.text).toBe(201);
    ids[name] = k.json.id;
    // one audited request per key, for `svc usage`
    await postJson(`${s.url}/v1/chat/completions`, { model: "no-such-model", messages: [{ role: "user", content: "hi" }] }, { authorization: `Bearer ${k.json.api_key}` });
  }
});
afterAll(async () => {
  await s?.stop();
});

describe("tables with names wider or narrower than their length", () => {
  it("svc keys list: STATUS starts in the same column on every row", async () => {
    const r = await runCli(["keys", "list"], env);
    expect(r.code, r.stderr).toBe(0);
    const lines = r.stdout.split("\n");
    const header = lines.find((l) => l.startsWith("ID "))!;
    const at = colOf(header, "STATUS");
    for (const name of [CJK, MIXED, "plain"]) {
      const line = lines.find((l) => l.startsWith(ids[name]))!;
      expect(line, name).toContain(name);
      expect(colOf(line, "active", line.indexOf(name) + name.length), `${name}: ${line}`).toBe(at);
    }
  });

  it("svc status: READY starts in the same column on every row", async () => {
    const r = await runCli(["status"], env);
    expect(r.code, r.stderr).toBe(0);
    const lines = r.stdout.split("\n");
    const header = lines.find((l) => l.startsWith("OBJECT "))!;
    const at = colOf(header, "READY");
    for (const name of [CJK, MIXED, "plain"]) {
      const line = lines.find((l) => l.startsWith(`ApiKey/${ids[name]} (`))!;
      expect(colOf(line, "True", line.indexOf(name) + name.length), `${name}: ${line}`).toBe(at);
    }
  });

  it("svc usage: the right-aligned last column ends where its header ends", async () => {
    let r = { code: -1, stdout: "", stderr: "" };
    // audit entries are written in batches: wait until every key's request is counted
    await eventually(async () => {
      r = await runCli(["usage"], env);
      return Object.values(ids).every((id) => r.stdout.includes(id));
    }, 20_000, 250);
    expect(r.code, r.stderr).toBe(0);
    const lines = r.stdout.trimEnd().split("\n");
    const header = lines[0];
    expect(header).toMatch(/LATENCY_P95_MS$/);
    for (const name of [CJK, MIXED, "plain"]) {
      const line = lines.find((l) => l.startsWith(ids[name]))!;
      expect(line, name).toContain(name);
      expect(cols(line), `${name}: ${line}`).toBe(cols(header));
    }
  }, 40_000);

  it("svc models list: MODIFIED starts in the same column on every row", async () => {
    const dir = await tempDir("svc-cli-tables-models-");
    for (const f of ["模型🔑.gguf", "plain.gguf"]) await writeFile(path.join(dir, f), Buffer.concat([Buffer.from("GGUF"), Buffer.alloc(60)]));
    const r = await runCli(["models", "list", "--dir", dir], env);
    expect(r.code, r.stderr).toBe(0);
    const lines = r.stdout.split("\n");
    const header = lines.find((l) => l.startsWith("NAME "))!;
    const at = colOf(header, "MODIFIED");
    for (const f of ["模型🔑.gguf", "plain.gguf"]) {
      const line = lines.find((l) => l.startsWith(f))!;
      const date = /\d{4}-\d\d-\d\d \d\d:\d\d:\d\d/.exec(line)!;
      expect(cols(line.slice(0, date.index)), `${f}: ${line}`).toBe(at);
    }
  });
});
