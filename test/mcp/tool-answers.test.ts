// What a call says when the service ran the tool but answered wrongly, or refused its arguments
// (docs/mcp.md): an answer that does not match the tool's own outputSchema is 502
// tool_output_invalid, and -32602 Invalid params from the service is a 400 invalid_request, as svc's
// own check of the arguments answers on this route.
// Both were 403 execution_denied ("refused to run"), which named neither cause.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestSvc, type TestSvc } from "../helpers/svc";
import { apply, call, mcpDoc, node, rough, waitReason } from "./helpers";

describe("a tool's answer the call cannot use", () => {
  let s: TestSvc;
  beforeAll(async () => {
    s = await startTestSvc();
    await apply(s, [mcpDoc("rough", { transport: "stdio", command: node, args: [rough] })]);
    await waitReason(s, "rough", "Connected");
  });
  afterAll(async () => {
    await s?.stop();
  });

  it("output that its outputSchema does not allow is 502 tool_output_invalid", async () => {
    const r = await call(s, "rough_shaped", {});
    expect(r.status).toBe(502);
    expect(r.json.error.code).toBe("tool_output_invalid");
    expect(r.json.error.message).toMatch(/outputSchema/);
  });

  it("arguments the service refuses (-32602) are 400 invalid_request, with its reason", async () => {
    const r = await call(s, "rough_picky", { n: 12 });
    expect(r.status).toBe(400);
    expect(r.json.error.code).toBe("invalid_request");
    expect(r.json.error.message).toMatch(/n must be below 10/);
    // the service is fine: the next call works
    expect((await call(s, "rough_echo", { message: "ok" })).json.result.content[0].text).toBe("echo: ok");
  });
});
