import fs from "node:fs";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { assertValid, loadPaths, loadText, ManifestError, type LoadResult } from "../../manifests";
import { doc, HASH, tempDir } from "./helpers";

const errors = (r: LoadResult) => r.issues.filter((i) => i.severity === "error");

/** Every issue of a text as ManifestError prints it. */
function messageOf(text: string, file = "m.yaml"): string {
  try {
    assertValid(loadText(text, file));
  } catch (e) {
    expect(e).toBeInstanceOf(ManifestError);
    return (e as Error).message;
  }
  throw new Error("expected the text to be refused");
}

describe("loadText: valid documents", () => {
  it("fills defaults, nested ones too, and keeps labels", () => {
    const r = loadText(doc("Server", "main", "port: 8080", { env: "dev" }) + "---\n" + doc("Agent", "helper", "instructions: hi"), "s.yaml");
    expect(r.issues).toEqual([]);
    expect(r.objects.map((o) => `${o.kind}/${o.name}`)).toEqual(["Server/main", "Agent/helper"]);
    const server = r.objects[0];
    expect(server.labels).toEqual({ env: "dev" });
    expect(server.spec).toEqual({
      port: 8080,
      host: "127.0.0.1",
      exposure: "loopback",
      allowUnauthenticatedLoopback: true,
      limits: { maxBodyBytes: 4194304, requestTimeoutSeconds: 600, maxConcurrentDispatch: 4 },
      metrics: { public: false },
    });
    expect(r.objects[1].spec.toolPolicy).toEqual({ allow: [], deny: [], requireApproval: [] });
    expect(r.objects[1].spec.maxIterations).toBe(8);
    expect(server.pos).toEqual({ file: "s.yaml", line: 1, column: 1 });
    // the second document starts on the line after "---" (line 8)
    expect(r.objects[1].pos).toEqual({ file: "s.yaml", line: 9, column: 1 });
  });

  it("skips empty and comment-only documents", () => {
    const text = "# leading comment\n---\n---\n# nothing here\n---\n" + doc("Model", "m", "file: m.gguf") + "---\n";
    const r = loadText(text, "e.yaml");
    expect(r.issues).toEqual([]);
    expect(r.objects).toHaveLength(1);
    expect(r.objects[0].spec.contextSize).toBe(2048);
  });

  it("accepts JSON: one object, or an array of objects", () => {
    const one = JSON.stringify({ apiVersion: "svc/v1", kind: "Model", metadata: { name: "a" }, spec: { file: "a.gguf" } });
    expect(assertValid(loadText(one, "a.json")).map((o) => o.name)).toEqual(["a"]);
    const arr = JSON.stringify(
      [
        { apiVersion: "svc/v1", kind: "Model", metadata: { name: "a" }, spec: { file: "a.gguf" } },
        { apiVersion: "svc/v1", kind: "Model", metadata: { name: "b" }, spec: { file: "b.gguf", threads: "2" } },
      ],
      null,
      2,
    );
    const r = loadText(arr, "arr.json");
    expect(errors(r).map((i) => `${i.pos?.line}:${i.pos?.column} ${i.path} ${i.message}`)).toEqual([
      '20:18 /spec/threads must be integer (got string)',
    ]);
  });

  it("clamps MemoryConfig values into range with a warning naming field, given and clamped values", () => {
    const r = loadText(doc("MemoryConfig", "memory", "memoryBudgetTokens: 10000\nsummaryDebounceSeconds: 5\nsalienceFloor: 0.5"), "mem.yaml");
    expect(errors(r)).toEqual([]);
    const warnings = r.issues.filter((i) => i.severity === "warning");
    expect(warnings.map((w) => `${w.pos?.line}:${w.pos?.column} ${w.path}: ${w.message}`)).toEqual([
      "6:23 /spec/memoryBudgetTokens: memoryBudgetTokens 10000 is outside the range 100 to 4000; clamped to 4000",
      "7:27 /spec/summaryDebounceSeconds: summaryDebounceSeconds 5 is outside the range 10 to 3600; clamped to 10",
    ]);
    const [mem] = assertValid(r); // warnings alone do not refuse
    // the spec stays as written (export round-trips it); the engine uses the normalized values
    expect(mem.spec).toMatchObject({ memoryBudgetTokens: 10000, summaryDebounceSeconds: 5, salienceFloor: 0.5, episodeRetentionDays: 365 });
  });

  it("rounds a fraction of a whole-number MemoryConfig field with a warning instead of refusing it", () => {
    const r = loadText(doc("MemoryConfig", "memory", "memoryBudgetTokens: 150.7\nconsolidationIntervalHours: 500.2"), "mem.yaml");
    expect(errors(r)).toEqual([]);
    expect(r.issues.filter((i) => i.severity === "warning").map((w) => `${w.path}: ${w.message}`)).toEqual([
      "/spec/memoryBudgetTokens: memoryBudgetTokens 150.7 is not a whole number; rounded to 151",
      "/spec/consolidationIntervalHours: consolidationIntervalHours 500.2 is not a whole number; rounded to 500; consolidationIntervalHours 500 is outside the range 1 to 168; clamped to 168",
    ]);
  });
});

describe("loadText: invalid documents", () => {
  it("reports a wrong type with file:line:col and the JSON path", () => {
    const text = doc("Model", "ok", "file: a.gguf") + "---\n" + doc("Server", "main", 'port: "abc"\nlimits:\n  maxBodyBytes: 12');
    const msg = messageOf(text, "conf/server.yaml");
    expect(msg).toContain("conf/server.yaml:13:9: /spec/port: must be integer (got string)");
    expect(msg).toContain("conf/server.yaml:15:19: /spec/limits/maxBodyBytes: must be >= 1024 (got 12)");
    expect(msg.split("\n")[0]).toBe("2 manifest errors; nothing was changed:");
  });

  it("all-or-nothing: one bad document leaves the good ones out of a refused load", () => {
    const r = loadText(doc("Model", "good", "file: a.gguf") + "---\n" + doc("Model", "bad", "threads: 0"), "m.yaml");
    expect(errors(r).map((i) => `${i.path}: ${i.message}`)).toEqual([
      '/spec: missing required field "file"',
      "/spec/threads: must be >= 1 (got 0)",
    ]);
    expect(() => assertValid(r)).toThrow(ManifestError);
  });

  it("points a missing required field at its parent and an unknown field at its key", () => {
    const r = loadText("apiVersion: svc/v1\nkind: Provider\nmetadata:\n  name: up\nspec:\n  baseUrl: http://x.test/v1\n  colour: red\n", "p.yaml");
    expect(errors(r).map((i) => `${i.pos?.line}:${i.pos?.column} ${i.path}: ${i.message}`)).toEqual([
      '6:3 /spec: missing required field "type"',
      '7:3 /spec/colour: unknown field "colour" (known fields: type, baseUrl, credential, headers, timeoutSeconds, models, apiVersion, deployments, auth, region, project, tokenUrl, routing, capabilities, currency)',
    ]);
  });

  it("lists allowed values of an enumeration", () => {
    const msg = messageOf(doc("Agent", "a", "capabilities: [tools, teleport]"));
    expect(msg).toContain('m.yaml:6:25: /spec/capabilities/1: must be one of "tools", "memory", "files", "web", "screen", "browser", "channel-write" (got "teleport")');
  });

  it("refuses an unknown kind, listing the known kinds", () => {
    const msg = messageOf("apiVersion: svc/v1\nkind: Modle\nmetadata: {name: x}\nspec: {}\n", "k.yaml");
    expect(msg).toContain('k.yaml:2:7: /kind: unknown kind "Modle"; known kinds: Server, Provider, Model, AccessPolicy, ApiKey, Agent, McpServer, MemoryConfig, AlertSettings');
  });

  it("refuses a wrong or missing apiVersion", () => {
    expect(messageOf("apiVersion: v1\nkind: Model\nmetadata: {name: x}\nspec: {file: a}\n")).toContain('m.yaml:1:13: /apiVersion: must be "svc/v1" (got "v1")');
    expect(messageOf("kind: Model\nmetadata: {name: x}\nspec: {file: a}\n")).toContain('m.yaml:1:1: /apiVersion: missing required field "apiVersion"');
  });

  it("refuses a document that is not a mapping", () => {
    expect(messageOf("- just\n- a list of words\n")).toContain("m.yaml:1:3: /: a document must be a mapping with apiVersion, kind, metadata and spec (got \"just\")");
  });

  it("reports bad YAML with the parser's line and column, and still checks the other documents", () => {
    const text = doc("Model", "m", "threads: nope") + "---\napiVersion: svc/v1\nkind: Model\nmetadata:\n  name: [broken\nspec: {}\n";
    const r = loadText(text, "y.yaml");
    const lines = errors(r).map((i) => `${i.pos?.file}:${i.pos?.line}:${i.pos?.column} ${i.path}: ${i.message}`);
    expect(lines).toEqual([
      "y.yaml:12:1 : YAML: Flow sequence in block collection must be sufficiently indented and end with a ]",
      'y.yaml:6:3 /spec: missing required field "file"',
      "y.yaml:6:12 /spec/threads: must be integer (got string)",
    ]);
    expect(r.objects).toEqual([]);
  });

  it("reports duplicate keys inside a mapping", () => {
    const r = loadText("apiVersion: svc/v1\nkind: Model\nkind: Agent\nmetadata: {name: x}\nspec: {}\n", "d.yaml");
    expect(errors(r).map((i) => `${i.pos?.line}:${i.pos?.column} ${i.message}`)).toEqual(["3:1 YAML: Map keys must be unique"]);
  });

  it("refuses a clear secret with a helpful message that does not echo it", () => {
    const text = doc("Provider", "openai", "type: openai\ncredential: sk-live-0123456789\nheaders:\n  X-Api-Key: hunter2");
    const msg = messageOf(text, "prov.yaml");
    expect(msg).toContain("prov.yaml:7:15: /spec/credential: secrets must be references like env:NAME or file:/path/to/secret");
    expect(msg).toContain("prov.yaml:9:16: /spec/headers/X-Api-Key: secrets must be references like env:NAME");
    expect(msg).not.toContain("sk-live-0123456789");
    expect(msg).not.toContain("hunter2");
    // references are accepted
    expect(errors(loadText(doc("Provider", "openai", "type: openai\ncredential: env:OPENAI_API_KEY\nheaders:\n  X-Api-Key: file:/run/secrets/k"), "p.yaml"))).toEqual([]);
  });

  it("refuses a raw API key in place of secretHash", () => {
    const msg = messageOf(doc("ApiKey", "ci", "secretHash: sk-svc-AbCdEf0123456789"));
    expect(msg).toContain('/spec/secretHash: must be "sha256:" followed by 64 hex digits, as printed by `svc keys generate`');
    expect(msg).not.toContain("sk-svc-AbCdEf0123456789");
    expect(errors(loadText(doc("ApiKey", "ci", `secretHash: "${HASH}"`), "k.yaml"))).toEqual([]);
  });

  it("refuses duplicate kind/name, naming both locations", () => {
    const text = doc("Model", "m", "file: a.gguf") + "---\n" + doc("Agent", "m", "") + "---\n" + doc("Model", "m", "file: b.gguf");
    const r = loadText(text, "dup.yaml");
    expect(errors(r).map((i) => `${i.pos?.line}:${i.pos?.column} ${i.message}`)).toEqual([
      "17:9 duplicate Model/m: declared at dup.yaml:1:1 and again at dup.yaml:14:1",
    ]);
  });

  it("refuses two objects of a singleton kind", () => {
    const r = loadText(doc("Server", "a", "port: 1") + "---\n" + doc("Server", "b", "port: 2"), "s.yaml");
    expect(errors(r).map((i) => i.message)).toEqual([
      "Server is a singleton: only one may be declared, but Server/a is declared at s.yaml:1:1 and Server/b at s.yaml:8:1",
    ]);
  });

  it("keeps line numbers right with CRLF line ends, document-end markers and comments on ---", () => {
    const pos = (text: string) => loadText(text, "f.yaml").issues.map((i) => `${i.pos?.line}:${i.pos?.column} ${i.path}`);
    const a = doc("Model", "a", "file: a.gguf");
    const b = doc("Model", "b", "file: b.gguf\nthreads: x");
    expect(pos((a + "---\n" + b).replace(/\n/g, "\r\n"))).toEqual(["14:12 /spec/threads"]);
    expect(pos(a + "...\n---\n" + b)).toEqual(["15:12 /spec/threads"]);
    expect(pos("--- # first\n" + a + "--- \n" + b)).toEqual(["15:12 /spec/threads"]);
  });

  it("reports the same positions when the same text is loaded again", () => {
    const text = doc("Model", "a", "file: a.gguf") + "---\n" + doc("Model", "b", "file: b.gguf\nthreads: many");
    const first = loadText(text, "again.yaml").issues;
    const second = loadText(text, "again.yaml").issues;
    expect(first.map((i) => `${i.pos?.line}:${i.pos?.column} ${i.message}`)).toEqual(["14:12 must be integer (got string)"]);
    expect(second).toEqual(first);
    // a cached document is a fresh copy each time
    const o1 = loadText(doc("Model", "c", "file: c.gguf"), "c.yaml").objects[0];
    o1.spec.threads = 99;
    expect(loadText(doc("Model", "c", "file: c.gguf"), "c.yaml").objects[0].spec.threads).toBe(1);
  });
});

describe("loadPaths", () => {
  const dir = tempDir("svc-loadpaths-");
  afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

  it("reads a folder recursively (yaml, yml, json; sorted; dot-entries and other files skipped) and stdin", async () => {
    fs.mkdirSync(path.join(dir, "conf/sub"), { recursive: true });
    fs.mkdirSync(path.join(dir, "conf/.hidden"), { recursive: true });
    fs.writeFileSync(path.join(dir, "conf/b.yaml"), doc("Model", "b", "file: b.gguf"));
    fs.writeFileSync(path.join(dir, "conf/a.yml"), doc("Model", "a", "file: a.gguf"));
    fs.writeFileSync(path.join(dir, "conf/sub/c.json"), JSON.stringify({ apiVersion: "svc/v1", kind: "Model", metadata: { name: "c" }, spec: { file: "c.gguf" } }));
    fs.writeFileSync(path.join(dir, "conf/notes.txt"), "not a manifest");
    fs.writeFileSync(path.join(dir, "conf/.hidden/x.yaml"), "this: [is not loaded");
    const r = await loadPaths([path.join(dir, "conf"), "-"], { stdin: doc("Agent", "from-stdin", "") });
    expect(r.issues).toEqual([]);
    expect(r.objects.map((o) => `${o.pos.file.replace(dir + "/", "")} ${o.kind}/${o.name}`)).toEqual([
      "conf/a.yml Model/a",
      "conf/b.yaml Model/b",
      "conf/sub/c.json Model/c",
      "<stdin> Agent/from-stdin",
    ]);
  });

  it("finds duplicates across files and reports unreadable paths", async () => {
    fs.mkdirSync(path.join(dir, "two"), { recursive: true });
    fs.writeFileSync(path.join(dir, "two/1.yaml"), doc("Model", "same", "file: a.gguf"));
    fs.writeFileSync(path.join(dir, "two/2.yaml"), "# header\n" + doc("Model", "same", "file: b.gguf"));
    const r = await loadPaths([path.join(dir, "two"), path.join(dir, "missing.yaml")]);
    const msgs = errors(r).map((i) => `${i.pos?.file.replace(dir + "/", "")}:${i.pos?.line}: ${i.message.replaceAll(dir + "/", "")}`);
    expect(msgs).toEqual([
      "missing.yaml:1: cannot read missing.yaml: ENOENT",
      "two/2.yaml:5: duplicate Model/same: declared at two/1.yaml:1:1 and again at two/2.yaml:2:1",
    ]);
    expect(r.objects.map((o) => o.name)).toEqual(["same"]);
  });
});
