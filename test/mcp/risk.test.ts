// Adding or re-pointing an MCP endpoint is a high-risk plan change (needs --yes / confirm).
import { describe, expect, it } from "vitest";
import { riskOf } from "../../manifests/risk";

describe("McpServer plan risk", () => {
  const stdio = { transport: "stdio", command: "node", args: ["server.js", "/home/me/notes"] };
  it("create is high-risk and names the endpoint without credentials", () => {
    expect(riskOf("create", "McpServer", undefined, stdio)).toBe("adds an MCP endpoint: command node");
    expect(riskOf("create", "McpServer", undefined, { transport: "http", url: "https://u:p@h.test/mcp?k=1" })).toBe("adds an MCP endpoint: url https://h.test/mcp");
  });
  it("changing url, command, stdio args or cwd is high-risk; timeouts, exposure and enabled are not", () => {
    expect(riskOf("update", "McpServer", stdio, { ...stdio, args: ["server.js", "/"] })).toMatch(/changes what the MCP command node runs/);
    expect(riskOf("update", "McpServer", stdio, { ...stdio, cwd: "/tmp" })).toMatch(/args or cwd/);
    expect(riskOf("update", "McpServer", stdio, { ...stdio, command: "python3" })).toMatch(/changes the MCP endpoint/);
    expect(riskOf("update", "McpServer", stdio, { ...stdio, toolCallTimeoutSeconds: 5, enabled: false, tools: { x: { expose: true } } })).toBeUndefined();
  });
  it("delete is high-risk", () => {
    expect(riskOf("delete", "McpServer", stdio, undefined, "config:team")).toBe("deletes McpServer (managed by config:team)");
  });
});
