// Real MCP servers over stdio behind svc: server-everything and server-filesystem connect, their
// tools appear namespaced in the catalog, the exposure policy decides what /mcp/tools shows, and
// /mcp/call runs them (with argument validation, refusals and error envelopes).
import path from "node:path";
import { mkdir, writeFile, readFile } from "node:fs/promises";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestSvc, tempDir, type TestSvc } from "../helpers/svc";
import { apply, call, everything, filesystem, mcpDoc, node, tools, waitReason } from "./helpers";

describe("McpServer over stdio", () => {
  let s: TestSvc;
  let folder: string;
  beforeAll(async () => {
    folder = await tempDir("svc-mcp-fs-");
    await writeFile(path.join(folder, "hello.txt"), "hello from the folder\n");
    s = await startTestSvc();
    const r = await apply(s, [
      mcpDoc("everything", { transport: "stdio", command: node, args: [everything, "stdio"], tools: { "get-env": { expose: false }, "get-sum": { expose: true } } }),
      mcpDoc("files", { transport: "stdio", command: node, args: [filesystem, folder], tools: { write_file: { expose: true }, create_directory: { enabled: false } } }),
    ]);
    expect(r.status).toBe(200);
  });
  afterAll(async () => {
    await s?.stop();
  });

  it("connects both and reports Ready with tool counts", async () => {
    const e = await waitReason(s, "everything", "Connected");
    expect(e.status).toBe("True");
    expect(e.message).toMatch(/^\d+ tools \(\d+ exposed\) from command /);
    const f = await waitReason(s, "files", "Connected");
    expect(f.status).toBe("True");
    const st = s.svc.store.get("McpServer", "files")!.status as any;
    expect(st.tools).toBeGreaterThan(5);
  });

  it("namespaces tools as <service>_<tool>, built-ins first, and the agent-facing list holds unexposed tools too", () => {
    const list = s.svc.engines.tools!.list();
    expect(list[0].name).toBe("svc_time");
    expect(list[1].name).toBe("svc_models");
    const names = list.map((t) => t.name);
    expect(names).toContain("everything_echo");
    expect(names).toContain("everything_get-env");
    expect(names).toContain("files_read_text_file");
    expect(names).not.toContain("files_create_directory"); // tools.create_directory.enabled: false
    expect(list.find((t) => t.name === "everything_echo")!.source).toEqual({ kind: "mcp", server: "everything", tool: "echo" });
  });

  it("GET /mcp/tools lists only exposable tools: read-only by annotation, plus explicit expose: true", async () => {
    const names = (await tools(s)).map((t) => t.name);
    expect(names).toContain("svc_time");
    expect(names).toContain("everything_echo"); // readOnlyHint: true
    expect(names).toContain("everything_get-sum"); // expose: true in the manifest
    expect(names).not.toContain("everything_get-env"); // expose: false beats readOnlyHint
    expect(names).not.toContain("everything_toggle-simulated-logging"); // readOnlyHint: false
    expect(names).toContain("files_read_text_file");
    expect(names).toContain("files_write_file"); // write-capable, exposed on purpose
    expect(names).not.toContain("files_edit_file"); // write-capable, default private
    const echo = (await tools(s)).find((t) => t.name === "everything_echo")!;
    expect(echo.inputSchema.properties.message.type).toBe("string");
  });

  it("POST /mcp/call runs a tool and answers the envelope", async () => {
    const r = await call(s, "everything_echo", { message: "hi there" });
    expect(r.status).toBe(200);
    expect(r.json).toEqual({ ok: true, tool: "everything_echo", result: { content: [{ type: "text", text: "Echo: hi there" }], isError: false } });
    const f = await call(s, "files_read_text_file", { path: path.join(folder, "hello.txt") });
    expect(f.status).toBe(200);
    expect(f.json.result.content[0].text).toContain("hello from the folder");
  });

  it("a tool that reports an error is still HTTP 200 with ok: false", async () => {
    const r = await call(s, "files_read_text_file", { path: "/etc/passwd" }); // outside the allowed folder
    expect(r.status).toBe(200);
    expect(r.json.ok).toBe(false);
    expect(r.json.result.isError).toBe(true);
    expect(r.json.result.content[0].text).toMatch(/denied|outside|not allowed/i);
  });

  it("an exposed write tool writes in the folder", async () => {
    const target = path.join(folder, "out.txt");
    const r = await call(s, "files_write_file", { path: target, content: "written by svc" });
    expect(r.json.ok).toBe(true);
    expect(await readFile(target, "utf8")).toBe("written by svc");
  });

  it("arguments are validated against the schema: 400 with the JSON path", async () => {
    const missing = await call(s, "everything_echo", {});
    expect(missing.status).toBe(400);
    expect(missing.json.error).toMatchObject({ code: "invalid_request", param: "/arguments/message", type: "invalid_request_error" });
    const wrong = await call(s, "everything_echo", { message: 5 });
    expect(wrong.status).toBe(400);
    expect(wrong.json.error.param).toBe("/arguments/message");
    expect(wrong.json.error.message).toMatch(/must be string/);
  });

  it("a non-exposable tool is refused with 403 tool_not_exposable before it runs, even when named directly", async () => {
    const r = await call(s, "files_create_directory", { path: path.join(folder, "nope") });
    expect(r.status).toBe(404); // disabled in the manifest: not in the catalog at all
    const w = await call(s, "files_edit_file", { path: path.join(folder, "hello.txt"), edits: [{ oldText: "hello", newText: "bye" }] });
    expect(w.status).toBe(403);
    expect(w.json.error).toMatchObject({ code: "tool_not_exposable", type: "permission_error" });
    expect(await readFile(path.join(folder, "hello.txt"), "utf8")).toBe("hello from the folder\n"); // nothing ran
    const u = await call(s, "nope_nothing", {});
    expect(u.status).toBe(404);
    expect(u.json.error.code).toBe("tool_not_found");
  });

  it("built-in tools: svc_time with a zone, svc_models", async () => {
    const t = await call(s, "svc_time", { timezone: "Europe/Paris" });
    expect(t.status).toBe(200);
    const body = JSON.parse(t.json.result.content[0].text);
    expect(body.timezone).toBe("Europe/Paris");
    expect(Date.parse(body.iso)).toBeGreaterThan(0);
    const bad = await call(s, "svc_time", { timezone: "Mars/Olympus" });
    expect(bad.json).toMatchObject({ ok: false, result: { isError: true } });
    const m = await call(s, "svc_models", {});
    expect(m.json.ok).toBe(true);
    expect(JSON.parse(m.json.result.content[0].text)).toHaveProperty("models");
  });

  it("GET /mcp/health answers", async () => {
    const r = await fetch(`${s.url}/mcp/health`);
    expect(r.status).toBe(200);
    expect(await r.json()).toMatchObject({ status: "ok" });
  });

  it("adding an MCP endpoint needs confirmation", async () => {
    const r = await apply(s, [mcpDoc("another", { transport: "stdio", command: node, args: [everything, "stdio"] })], { confirm: false, source: "other" });
    expect(r.status).toBe(409);
    expect(r.json.error.code).toBe("confirmation_required");
    expect(r.json.error.reasons[0]).toMatch(/adds an MCP endpoint/);
    expect(s.svc.store.get("McpServer", "another")).toBeUndefined();
  });
});
