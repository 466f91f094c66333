// The deploy examples (examples/deploy: docker-compose.yml, kubernetes/*.yaml) parse, and what they
// rely on exists in svc: every SVC_* variable they set is read by svc's code, the ports agree with
// the command line they start, the Secret holds every key the Deployment references, and the
// probe and scrape paths (/health, /metrics) answer 200 on a running svc.
import { describe, it, expect, beforeAll, afterAll } from "vitest";
import { readFileSync, readdirSync, statSync } from "node:fs";
import path from "node:path";
import YAML from "yaml";
import { repoRoot } from "../helpers/cli";
import { startTestSvc, type TestSvc } from "../helpers/svc";

const deploy = path.join(repoRoot, "examples/deploy");
const read = (p: string) => readFileSync(path.join(deploy, p), "utf8");

/** every SVC_* name svc's own code mentions (api, cli, controllers, engines, prisma) */
function knownVariables(): Set<string> {
  const out = new Set<string>();
  const walk = (dir: string) => {
    for (const e of readdirSync(dir)) {
      const p = path.join(dir, e);
      if (e === "generated" || e === "generated-pg") continue;
      if (statSync(p).isDirectory()) walk(p);
      else if (/\.(ts|mjs)$/.test(e)) for (const m of readFileSync(p, "utf8").matchAll(/\bSVC_[A-Z0-9_]+\b/g)) out.add(m[0]);
    }
  };
  for (const d of ["api", "cli", "controllers", "engines", "prisma", "bin"]) walk(path.join(repoRoot, d));
  return out;
}

const portArg = (args: string[]) => Number(args[args.indexOf("--port") + 1]);

describe("deploy examples", () => {
  const known = knownVariables();
  let s: TestSvc;

  beforeAll(async () => {
    s = await startTestSvc({ resyncMs: 0 });
  }, 60_000);
  afterAll(async () => {
    await s?.stop();
  });

  it("docker-compose.yml: replicas set only variables svc reads, on the port nginx and the health check use", () => {
    const c = YAML.parse(read("docker-compose.yml"), { merge: true });
    const replicas = Object.entries<any>(c.services).filter(([n]) => n.startsWith("svc-"));
    expect(replicas.length).toBeGreaterThanOrEqual(2);
    const cmd = read("Dockerfile").match(/^CMD (\[.*\])$/m)![1];
    const port = portArg(JSON.parse(cmd));
    for (const [name, r] of replicas) {
      const vars = Object.keys(r.environment);
      expect(vars, name).toEqual(expect.arrayContaining(["SVC_DATABASE_URL", "SVC_REDIS_URL", "SVC_ADMIN_KEY"]));
      for (const v of vars) expect(known.has(v), `${name}: ${v} is not read by svc`).toBe(true);
      expect(r.healthcheck.test.join(" ")).toContain(`127.0.0.1:${port}/health`);
      expect(r.environment.SVC_DATABASE_URL).toMatch(/^postgresql:\/\/[^@]+@postgres:5432\//);
      expect(r.environment.SVC_REDIS_URL).toBe("redis://redis:6379");
      for (const sec of r.secrets) expect(c.secrets[sec], sec).toBeDefined();
    }
    const upstreams = [...read("nginx.conf").matchAll(/server (svc-\d+):(\d+);/g)];
    expect(upstreams.map((m) => m[1]).sort()).toEqual(replicas.map(([n]) => n).sort());
    for (const m of upstreams) expect(Number(m[2])).toBe(port);
    expect(c.services.postgres.environment.POSTGRES_DB).toBe("svc");
  });

  it("kubernetes: Deployment, Service and Secret agree, and svc reads every variable set", () => {
    const docs = readdirSync(path.join(deploy, "kubernetes")).flatMap((f) => YAML.parseAllDocuments(read(`kubernetes/${f}`)).map((d) => d.toJS()));
    const byKind = (k: string) => docs.find((d) => d?.kind === k);
    const dep = byKind("Deployment");
    const svcDoc = byKind("Service");
    const secret = byKind("Secret");
    expect(dep && svcDoc && secret).toBeTruthy();
    const c = dep.spec.template.spec.containers[0];
    const port = portArg(c.args);
    expect(c.ports.find((p: any) => p.name === "http").containerPort).toBe(port);
    expect(svcDoc.spec.selector).toEqual(dep.spec.selector.matchLabels);
    expect(svcDoc.spec.ports[0].targetPort).toBe("http");
    for (const e of c.env) {
      expect(known.has(e.name), `${e.name} is not read by svc`).toBe(true);
      const ref = e.valueFrom?.secretKeyRef;
      if (ref) {
        expect(ref.name).toBe(secret.metadata.name);
        expect(Object.keys(secret.stringData)).toContain(ref.key);
      }
    }
    expect(c.env.map((e: any) => e.name)).toEqual(expect.arrayContaining(["SVC_DATABASE_URL", "SVC_REDIS_URL", "SVC_ADMIN_KEY"]));
    for (const p of [c.readinessProbe, c.livenessProbe]) expect(p.httpGet).toEqual({ path: "/health", port: "http" });
    expect(dep.spec.template.metadata.annotations["prometheus.io/path"]).toBe("/metrics");
    expect(Number(dep.spec.template.metadata.annotations["prometheus.io/port"])).toBe(port);
    const items = dep.spec.template.spec.volumes.find((v: any) => v.secret)?.secret.items ?? [];
    for (const i of items) expect(Object.keys(secret.stringData)).toContain(i.key);
  });

  it("the probe and scrape paths answer on a running svc", async () => {
    for (const p of ["/health", "/metrics"]) expect((await fetch(s.url + p)).status, p).toBe(200);
  });
});
