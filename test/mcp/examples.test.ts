// examples/mcp runs as it is: started from the repository root with --config examples/mcp, both
// services connect and their tools answer through /mcp/call.
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { startTestSvc, type TestSvc } from "../helpers/svc";
import { repoRoot } from "../helpers/cli";
import { call, waitReason } from "./helpers";

describe("examples/mcp", () => {
  let s: TestSvc;
  afterAll(async () => {
    await s?.stop();
  });

  it("connects everything and notes, and their tools run", async () => {
    expect(process.cwd()).toBe(repoRoot); // the examples' paths are relative to the repository root
    s = await startTestSvc({ config: [path.join(repoRoot, "examples/mcp")] });
    await waitReason(s, "everything", "Connected");
    await waitReason(s, "notes", "Connected");
    expect((await call(s, "everything_echo", { message: "example" })).json.result.content[0].text).toBe("Echo: example");
    const r = await call(s, "notes_read_text_file", { path: path.join(repoRoot, "examples/mcp/notes/welcome.md") });
    expect(r.json.result.content[0].text).toContain("# Notes");
    expect(s.svc.engines.tools!.get("notes_move_file")).toBeUndefined();
    expect((await call(s, "notes_write_file", { path: "x", content: "y" })).json.error.code).toBe("tool_not_exposable");
  });
});
