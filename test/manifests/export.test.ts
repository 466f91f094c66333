import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { parse as parseYaml } from "yaml";
import { applyPlan, assertValid, exportObjects, loadText, makePlan, schemaText } from "../../manifests";
import { bundleSchema } from "../../schemas";
import type { ResourceStore } from "../../prisma/resource-store";
import { doc, HASH, tempStore, type TempStore } from "./helpers";

let t: TempStore;
let store: ResourceStore;
beforeEach(async () => {
  t = await tempStore();
  store = t.store;
});
afterEach(async () => {
  await t.close();
});

const manifests = [
  doc("Server", "main", "port: 8080\nlimits:\n  maxConcurrentDispatch: 2", { env: "dev" }),
  doc("Provider", "openai", "type: openai\nbaseUrl: https://api.openai.test/v1\ncredential: env:OPENAI_API_KEY\nheaders:\n  OpenAI-Organization: file:/run/secrets/org\nmodels:\n  - name: gpt-x\n    inputPerMillion: 1.5"),
  doc("Model", "tiny", "file: tiny.gguf\nsampling:\n  temperature: 0.2"),
  doc("Agent", "helper", 'instructions: "Be brief.\\nAlways cite."\ncapabilities: [tools, memory]'),
  doc("McpServer", "fs", "transport: stdio\ncommand: npx\nargs: [server-filesystem, /tmp]\nenvFrom:\n  TOKEN: env:FS_TOKEN"),
  doc("MemoryConfig", "memory", "memoryBudgetTokens: 1200"),
];
const keyDoc = doc("ApiKey", "ci", `secretHash: "${HASH}"\nrate_limits:\n  per_minute: 60\nwebhook:\n  url: https://hooks.test/h\n  secret: env:HOOK_SECRET`);

async function seed(docs: string[]) {
  const p = makePlan(store, assertValid(loadText(docs.join("---\n"), "seed.yaml")), { source: "repo" });
  await applyPlan(store, p, { confirm: true });
}

describe("export", () => {
  it("writes sorted documents without secrets, keeping env:/file: references", async () => {
    await seed([...manifests, keyDoc]);
    // objects written through the API, some holding values that are not references
    await store.write([
      { op: "upsert", kind: "ApiKey", name: "issued", owner: "api", spec: { key_type: "user", secretHash: "sha256:" + "cd".repeat(32) } },
      { op: "upsert", kind: "Provider", name: "legacy", owner: "api", spec: { type: "openai", credential: "sk-clear-value", headers: { A: "env:A", B: "plain" } } },
    ]);
    const y = exportObjects(store, { format: "yaml" });
    const docs = y.split(/^---$/m).map((d) => parseYaml(d));
    expect(docs.map((d) => `${d.kind}/${d.metadata.name}`)).toEqual([
      "Agent/helper",
      "ApiKey/ci",
      "McpServer/fs",
      "MemoryConfig/memory",
      "Model/tiny",
      "Provider/openai",
      "Server/main",
    ]);
    expect(y).not.toContain(HASH.slice(7));
    expect(y).not.toContain("secretHash:");
    expect(y).toContain("# /spec/secretHash omitted (secret); set it before applying this document");
    const key = docs[1];
    expect(key.spec.webhook.secret).toBe("env:HOOK_SECRET");
    expect(key.spec.rate_limits).toEqual({ per_minute: 60 });
    const prov = docs.find((d) => d.kind === "Provider");
    expect(prov.spec.credential).toBe("env:OPENAI_API_KEY");
    expect(prov.spec.headers).toEqual({ "OpenAI-Organization": "file:/run/secrets/org" });
    // issue 38: an exported document records its owner
    expect(docs.find((d) => d.kind === "Server").metadata).toEqual({ name: "main", labels: { env: "dev" }, owner: "config:repo" });
    expect(docs.find((d) => d.kind === "Model").metadata).toEqual({ name: "tiny", owner: "config:repo" });

    const all = exportObjects(store, { format: "json", includeApiOwned: true });
    const arr = JSON.parse(all);
    expect(arr.map((d: any) => `${d.kind}/${d.metadata.name}`)).toEqual([
      "Agent/helper",
      "ApiKey/ci",
      "ApiKey/issued",
      "McpServer/fs",
      "MemoryConfig/memory",
      "Model/tiny",
      "Provider/legacy",
      "Provider/openai",
      "Server/main",
    ]);
    expect(all).not.toContain("sk-clear-value");
    expect(all).not.toContain("secretHash");
    expect(arr.find((d: any) => d.metadata.name === "legacy").spec).toEqual({ type: "openai", headers: { A: "env:A" } });
  });

  it("round-trips: an export loads cleanly and plans as unchanged (YAML and JSON)", async () => {
    await seed(manifests);
    for (const format of ["yaml", "json"] as const) {
      const text = exportObjects(store, { format });
      const r = loadText(text, `export.${format}`);
      expect(r.issues).toEqual([]);
      const p = makePlan(store, r.objects, { source: "repo", prune: true });
      expect(p.summary).toEqual({ create: 0, update: 0, delete: 0, unchanged: manifests.length });
    }
    // the multi-line instructions survive as they were
    const agent = loadText(exportObjects(store, { format: "yaml" }), "e.yaml").objects.find((o) => o.kind === "Agent")!;
    expect(agent.spec.instructions).toBe("Be brief.\nAlways cite.");
  });

  it("an exported ApiKey does not load back until its secretHash is set again", async () => {
    await seed([keyDoc]);
    const text = exportObjects(store, { format: "yaml" });
    const r = loadText(text, "keys.yaml");
    expect(r.issues.map((i) => `${i.path}: ${i.message}`)).toEqual(['/spec: missing required field "secretHash"']);
    const fixed = loadText(text.replace("spec:\n", `spec:\n  secretHash: "${HASH}"\n`), "keys.yaml");
    expect(fixed.issues).toEqual([]);
    expect(makePlan(store, fixed.objects, { source: "repo" }).summary.unchanged).toBe(1);
  });

  it("exports an empty store as an empty document set", async () => {
    expect(exportObjects(store, { format: "yaml" })).toBe("");
    expect(JSON.parse(exportObjects(store, { format: "json" }))).toEqual([]);
  });
});

describe("schemaText", () => {
  it("renders the bundle schema as YAML or JSON", () => {
    const expected = JSON.parse(JSON.stringify(bundleSchema()));
    expect(JSON.parse(schemaText("json"))).toEqual(expected);
    expect(parseYaml(schemaText("yaml"))).toEqual(expected);
    expect(Object.keys(expected.definitions)).toContain("MemoryConfig");
  });
});
