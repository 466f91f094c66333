// Catalog names: <service>_<tool>, sanitized, at most 64 characters, unique and stable, and
// never a built-in's name.
import { describe, expect, it } from "vitest";
import { assignNames, hashedName, plainName, serviceSlug, MAX_TOOL_NAME } from "../../engines/mcp/names";
import { exposable, isAppOnly } from "../../engines/mcp/exposure";

const names = (pairs: Array<{ service: string; tool: string }>, reserved: string[] = []) => {
  const m = assignNames(pairs, new Set(reserved));
  return pairs.map((p) => m.get(p));
};

describe("catalog names", () => {
  it("lower-cases the service and turns other characters into _", () => {
    expect(serviceSlug("Research.Team")).toBe("research_team");
    expect(plainName("research", "search")).toBe("research_search");
    expect(plainName("my.svc", "get data!")).toBe("my_svc_get_data_");
  });

  it("keeps names within 64 characters with a stable hash", () => {
    const long = { service: "a-very-long-service-name-that-goes-on", tool: "and_a_tool_name_that_is_also_quite_long_indeed" };
    const [n] = names([long]);
    expect(n!.length).toBeLessThanOrEqual(MAX_TOOL_NAME);
    expect(n).toBe(hashedName(long.service, long.tool));
    expect(names([{ ...long }])[0]).toBe(n); // same pair, same name, every time
    expect(n).toMatch(/^[a-zA-Z0-9_-]+$/);
  });

  it("two pairs that would share a name get different names, whichever order they come in", () => {
    const a = { service: "a.b", tool: "c" }; // a_b_c
    const b = { service: "a", tool: "b_c" }; // a_b_c
    const one = names([a, b]);
    const two = names([b, a]).reverse();
    expect(one[0]).not.toBe(one[1]);
    expect(one).toEqual(two);
    expect(one).toContain("a_b_c"); // the first in (service, tool) order keeps the plain name
  });

  it("a service tool never takes a built-in's name", () => {
    const [n] = names([{ service: "svc", tool: "time" }], ["svc_time", "svc_models"]);
    expect(n).not.toBe("svc_time");
    expect(n).toMatch(/^svc_time_[0-9a-f]{8}$/);
  });
});

describe("exposure policy", () => {
  const t = (annotations?: Record<string, unknown>, _meta?: Record<string, unknown>) => ({ name: "x", inputSchema: { type: "object" }, annotations, _meta });
  it("readOnly default: only tools annotated readOnlyHint: true; unannotated tools count as write-capable", () => {
    expect(exposable(t({ readOnlyHint: true }), undefined, "readOnly")).toBe(true);
    expect(exposable(t({ readOnlyHint: false }), undefined, "readOnly")).toBe(false);
    expect(exposable(t(), undefined, undefined)).toBe(false);
  });
  it("the manifest's per-tool expose wins, except for app-only tools", () => {
    expect(exposable(t(), { enabled: true, expose: true }, "readOnly")).toBe(true);
    expect(exposable(t({ readOnlyHint: true }), { enabled: true, expose: false }, "all")).toBe(false);
    const app = t({ readOnlyHint: true }, { ui: { visibility: ["app"] } });
    expect(isAppOnly(app)).toBe(true);
    expect(exposable(app, { enabled: true, expose: true }, "all")).toBe(false);
    expect(isAppOnly(t({}, { ui: { visibility: ["model", "app"] } }))).toBe(false);
    expect(isAppOnly(t({}, { "openai/visibility": "private" }))).toBe(true);
  });
  it("exposeDefault all / none", () => {
    expect(exposable(t(), undefined, "all")).toBe(true);
    expect(exposable(t({ readOnlyHint: true }), undefined, "none")).toBe(false);
  });
});
