// The kinds' validators compiled at build time (bin/kind-validators.mjs) judge a document exactly
// as ajv compiling the same schemas at run time does: the same errors, the same defaults filled.
// `svc config validate` uses the prebuilt ones (test/startup/lazy-loading.test.ts), tests and a
// checkout that was not built use the run-time ones, so both must agree.
import Ajv from "ajv";
import addFormats from "ajv-formats";
import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { parseAllDocuments } from "yaml";
import { AJV_OPTIONS } from "../../manifests/ajv-options";
import { kindSchemas, type Kind } from "../../schemas";
import { repoRoot } from "../helpers/cli";

const prebuilt = await import(path.join(repoRoot, "manifests/generated/kind-validators.mjs"));

function examples(): { kind: Kind; doc: any }[] {
  const out: { kind: Kind; doc: any }[] = [];
  const walk = (dir: string) => {
    for (const e of readdirSync(dir, { withFileTypes: true })) {
      const p = path.join(dir, e.name);
      if (e.isDirectory()) walk(p);
      else if (/\.ya?ml$/.test(e.name))
        for (const d of parseAllDocuments(readFileSync(p, "utf8"))) {
          const doc = d.toJSON();
          if (doc?.kind && doc.kind in kindSchemas) out.push({ kind: doc.kind, doc });
        }
    }
  };
  walk(path.join(repoRoot, "examples"));
  return out;
}

/** Wrong in the ways people get documents wrong: an unknown field, a wrong type, a missing spec field. */
function broken(doc: any): any[] {
  const spec = doc.spec ?? {};
  const first = Object.keys(spec)[0];
  return [
    { ...doc, spec: { ...spec, not_a_field: 1 } },
    first ? { ...doc, spec: { ...spec, [first]: { nested: [true] } } } : { ...doc, spec: 42 },
    { ...doc, metadata: { ...doc.metadata, name: 7 } },
    { ...doc, apiVersion: "svc/v0" },
  ];
}

const shape = (errors: any[] | null | undefined) =>
  (errors ?? []).map((e) => ({ at: e.instancePath, keyword: e.keyword, params: e.params, schemaPath: e.schemaPath, message: e.message }));

describe("prebuilt kind validators", () => {
  const runtime = new Ajv(AJV_OPTIONS);
  addFormats(runtime);
  const docs = examples();

  it("were built from the schemas this checkout has", () => {
    expect(Object.keys(kindSchemas).every((k) => typeof prebuilt[k] === "function")).toBe(true);
    expect(docs.length).toBeGreaterThan(10);
  });

  it("agree with run-time compiled ajv on every example and its broken variants", () => {
    for (const { kind, doc } of docs) {
      const compiled = runtime.compile(kindSchemas[kind]);
      for (const d of [doc, ...broken(doc)]) {
        const a = structuredClone(d);
        const b = structuredClone(d);
        const okA = prebuilt[kind](a);
        const okB = compiled(b);
        expect(okA, `${kind} ${d.metadata?.name}`).toBe(okB);
        expect(shape(prebuilt[kind].errors)).toEqual(shape(compiled.errors));
        expect(a, "the same defaults filled in").toEqual(b);
      }
    }
  });
});
