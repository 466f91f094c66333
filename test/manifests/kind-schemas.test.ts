// The kinds' JSON Schemas are valid JSON Schema: svc compiles them without checking them against
// the meta-schema at start-up (manifests/validate.ts, validateSchema: false), so this test does.
import Ajv from "ajv";
import addFormats from "ajv-formats";
import { describe, expect, it } from "vitest";
import { kindSchemas } from "../../schemas";

describe("kind schemas", () => {
  it("every kind's schema passes the JSON Schema meta-schema", () => {
    const ajv = addFormats(new Ajv({ strict: false }));
    const invalid = Object.entries(kindSchemas).filter(([, s]) => !ajv.validateSchema(s as object)).map(([k]) => `${k}: ${ajv.errorsText(ajv.errors)}`);
    expect(Object.keys(kindSchemas).length).toBeGreaterThan(8);
    expect(invalid).toEqual([]);
  });
});
