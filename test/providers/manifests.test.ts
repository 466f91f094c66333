// The Provider manifests of docs/providers.md validate against the schema as written, and the
// new fields refuse bad values with a pointer to them.
import { readFileSync } from "node:fs";
import path from "node:path";
import { parseAllDocuments } from "yaml";
import { describe, expect, it } from "vitest";
import { validateDocument } from "../../manifests/validate";
import { repoRoot } from "../helpers/cli";

const docs = () => {
  const md = readFileSync(path.join(repoRoot, "docs/providers.md"), "utf8");
  const blocks = [...md.matchAll(/```yaml\n([\s\S]*?)```/g)].map((m) => m[1]);
  return blocks.flatMap((b) => parseAllDocuments(b).map((d) => d.toJS()));
};

const provider = (spec: Record<string, unknown>) => ({ apiVersion: "svc/v1", kind: "Provider", metadata: { name: "p" }, spec: { type: "openai", models: [{ name: "m" }], ...spec } });

describe("Provider manifests", () => {
  it("every example in docs/providers.md is valid", () => {
    const all = docs();
    expect(all.length).toBe(7);
    for (const d of all) expect(validateDocument(d.kind, d)).toEqual([]);
    const providers = all.filter((d: any) => d.kind === "Provider");
    expect(providers.length).toBe(6);
    expect(new Set(providers.map((d: any) => d.spec.type))).toEqual(new Set(["azure-openai", "bedrock", "gemini", "vertex"]));
    // the router declared on a Model
    expect(all.filter((d: any) => d.kind === "Model").map((d: any) => d.spec.router?.deployments?.length)).toEqual([3]);
  });

  it("refuses an unknown strategy, a negative weight, a clear-text credential and a bad region", () => {
    expect(validateDocument("Provider", provider({ routing: { strategy: "random" } })).map((p) => p.path)).toContain("/spec/routing/strategy");
    expect(validateDocument("Provider", provider({ models: [{ name: "m", weight: -1 }] })).map((p) => p.path)).toContain("/spec/models/0/weight");
    expect(validateDocument("Provider", provider({ type: "bedrock", credential: "AKIA123:secret" })).map((p) => p.path)).toContain("/spec/credential");
    expect(validateDocument("Provider", provider({ type: "bedrock", region: "EU West" })).map((p) => p.path)).toContain("/spec/region");
    expect(validateDocument("Provider", provider({ routing: { cooldown: { failures: 0 } } })).map((p) => p.path)).toContain("/spec/routing/cooldown/failures");
  });
});
