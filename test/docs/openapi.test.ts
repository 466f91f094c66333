// /openapi.json documents every route the server has, and only those; it is a valid OpenAPI 3.1
// document (checked with an independent validator), and its request bodies are JSON Schemas.
import { Validator } from "@seriousme/openapi-schema-validator";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { inferenceRoutes, routers } from "../../api/routes";
import { routeDocs } from "../../api/openapi/catalogue";
import { servedRoutes as served } from "../../api/route-table";
import { startTestSvc, type TestSvc } from "../helpers/svc";

let s: TestSvc;
beforeAll(async () => {
  s = await startTestSvc();
});
afterAll(async () => {
  await s?.stop();
});

/** METHOD path of every route the routers really serve (api/route-table.ts, as start-up checks). */
function servedRoutes(): Set<string> {
  return served(routers.map((make) => make(s.svc)), inferenceRoutes.flatMap((make) => make(s.svc)));
}

describe("/openapi.json", () => {
  it("documents every served route, and no route that is not served", () => {
    const served = servedRoutes();
    const documented = new Set(routeDocs.map((d) => `${d.method.toUpperCase()} ${d.path}`));
    expect([...served].filter((x) => !documented.has(x)).sort(), "served but not documented (api/openapi/catalogue.ts)").toEqual([]);
    expect([...documented].filter((x) => !served.has(x)).sort(), "documented but not served").toEqual([]);
  });

  it("is served, and is a valid OpenAPI 3.1 document", async () => {
    const res = await fetch(`${s.url}/openapi.json`);
    expect(res.status).toBe(200);
    const doc: any = await res.json();
    expect(doc.openapi).toBe("3.1.0");
    const result = await new Validator().validate(doc);
    expect(result.errors ?? []).toEqual([]);
    expect(result.valid).toBe(true);
    // the key body is the one the server validates with: an unknown field is not allowed there
    expect(doc.paths["/v1/api-keys"].post.requestBody.content["application/json"].schema.additionalProperties).toBe(false);
    expect(Object.keys(doc.paths["/v1/chat/completions"].post.requestBody.content["application/json"].schema.properties)).toEqual(expect.arrayContaining(["model", "messages", "stream", "max_tokens"]));
  });
});
