// The key hierarchy: organization_id on organization, team and user keys; team_id on team and user
// keys; user_id on user keys. A missing id is 400 naming it, from the key API and at manifest
// validation alike; key_type, when omitted, is inferred from the most specific id; a key with no
// ids is a standalone key (key_type "user", no ids).
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startEnv, type Env } from "./fixtures";
import { loadText } from "../../manifests";

let env: Env;
beforeAll(async () => {
  env = await startEnv();
});
afterAll(async () => {
  await env?.stop();
});

describe("key API", () => {
  it("refuses each missing hierarchy id with 400 naming the field", async () => {
    const cases: Array<[Record<string, unknown>, string]> = [
      [{ key_type: "organization" }, "organization_id"],
      [{ key_type: "team", team_id: "t" }, "organization_id"],
      [{ key_type: "team", organization_id: "o" }, "team_id"],
      [{ key_type: "user", organization_id: "o", team_id: "t" }, "user_id"],
      [{ key_type: "user", organization_id: "o", user_id: "u" }, "team_id"],
      [{ key_type: "user", team_id: "t", user_id: "u" }, "organization_id"],
      // inferred: user_id makes a user key, team_id a team key
      [{ user_id: "u" }, "team_id"],
      [{ team_id: "t", user_id: "u" }, "organization_id"],
      [{ team_id: "t" }, "organization_id"],
    ];
    for (const [body, field] of cases) {
      const r = await env.createKey({ name: "h", ...body });
      expect(r.status, JSON.stringify(body)).toBe(400);
      expect(r.json.error.code).toBe("invalid_request");
      expect(r.json.error.param, JSON.stringify(body)).toBe(field);
      expect(r.json.error.message).toContain(field);
    }
  });

  it("infers key_type from the most specific id, and keeps a key with no ids standalone", async () => {
    const org = await env.createKey({ name: "o", organization_id: "acme" });
    expect(org.status).toBe(201);
    expect(org.json).toMatchObject({ key_type: "organization", organization_id: "acme", team_id: null, user_id: null });
    const team = await env.createKey({ name: "t", organization_id: "acme", team_id: "red" });
    expect(team.json).toMatchObject({ key_type: "team", organization_id: "acme", team_id: "red", user_id: null });
    const user = await env.createKey({ name: "u", organization_id: "acme", team_id: "red", user_id: "ann" });
    expect(user.json).toMatchObject({ key_type: "user", organization_id: "acme", team_id: "red", user_id: "ann" });
    const alone = await env.createKey({ name: "standalone" });
    expect(alone.status).toBe(201);
    expect(alone.json).toMatchObject({ key_type: "user", organization_id: null, team_id: null, user_id: null });
    // an explicit key_type user with no ids is the same standalone key (manifests made by `svc keys generate`)
    expect((await env.createKey({ name: "standalone 2", key_type: "user" })).json).toMatchObject({ key_type: "user", organization_id: null });
  });

  it("an organization key's new keys sit in its organization and need their own ids", async () => {
    const mgr = await env.key({ key_type: "organization", organization_id: "acme", permissions: { manage_keys: true } });
    const noUser = await env.createKey({ name: "x", key_type: "user", team_id: "red" }, mgr.secret);
    expect(noUser.status).toBe(400);
    expect(noUser.json.error.param).toBe("user_id");
    const team = await env.createKey({ name: "x", team_id: "red" }, mgr.secret);
    expect(team.status).toBe(201);
    expect(team.json).toMatchObject({ key_type: "team", organization_id: "acme", team_id: "red" });
  });
});

describe("ApiKey manifests", () => {
  const doc = (spec: string) => `apiVersion: svc/v1\nkind: ApiKey\nmetadata:\n  name: k\nspec:\n  secretHash: "sha256:${"ab".repeat(32)}"\n${spec}`;
  const errors = (text: string) => loadText(text, "k.yaml").issues.filter((i) => i.severity === "error").map((i) => `${i.path}: ${i.message}`);

  it("refuses a missing hierarchy id at validation, naming the field", () => {
    expect(errors(doc("  key_type: team\n  organization_id: acme\n"))).toEqual([expect.stringMatching(/^\/spec\/team_id: is required for a team key/)]);
    expect(errors(doc("  key_type: user\n  organization_id: acme\n  team_id: red\n"))).toEqual([expect.stringMatching(/^\/spec\/user_id: is required for a user key/)]);
    expect(errors(doc("  key_type: organization\n"))).toEqual([expect.stringMatching(/^\/spec\/organization_id: is required for an organization key/)]);
    expect(errors(doc("  team_id: red\n"))).toEqual([expect.stringMatching(/^\/spec\/organization_id: is required for a team key/)]);
  });

  it("infers key_type and accepts standalone keys", () => {
    const r = loadText(doc("  organization_id: acme\n  team_id: red\n"), "k.yaml");
    expect(r.issues.filter((i) => i.severity === "error")).toEqual([]);
    expect((r.objects[0] as any).spec.key_type).toBe("team");
    expect(errors(doc("  key_type: user\n"))).toEqual([]);
    expect(errors(doc(""))).toEqual([]);
  });

  it("apply over HTTP refuses the document (422) and changes nothing", async () => {
    const r = await env.api("POST", "/admin/config/apply", { document: doc("  key_type: team\n  organization_id: acme\n"), source: "hier", confirm: true });
    expect(r.status).toBe(422); // an invalid manifest, as for any schema error
    expect(JSON.stringify(r.json)).toContain("/spec/team_id");
    expect(env.svc.svc.store.get("ApiKey", "k")).toBeUndefined();
  });
});
