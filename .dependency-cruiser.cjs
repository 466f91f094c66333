// The layering of docs/architecture.md, checked in CI (npm run lint:deps): imports point one way,
// cli/api -> controllers/engines -> manifests/schemas/prisma (api/ reaches engines only through
// Svc.engines: boot/ is the one module that builds controllers and hands them their engines), the
// engine packages import only packages below them in ENGINE_ORDER, and no module imports itself
// back through a loop. Type-only imports count too (tsPreCompilationDeps), so an `import type`
// cannot smuggle a dependency the other way. No exceptions are listed here on purpose.

// The engine packages (folders of engines/), bottom first: each may import only those before it.
// engines/*.ts files other than svc.ts (errors, ids, paths, host, ...) are below every package;
// engines/svc.ts, the registry of running engines, is above them all and imported by none.
const ENGINE_ORDER = [
  // shared types and plumbing (telemetry: tracing's switch and span helpers, which every package may call)
  "telemetry", "chat", "secrets", "net", "store", "tools",
  // what the gateway forwards to
  "providers", "inference",
  // the response cache the gateway pipeline answers from (docs/cache.md)
  "cache",
  // the gate: keys, policy, limits, audit, alerts and their outboxes
  "gateway",
  // engines that call through the gateway
  "pairing", "cluster", "media", "memory", "mcp", "agents",
  // observers: they read the engines above, nothing imports them back
  "metrics",
];

const enginePackageRules = ENGINE_ORDER.map((pkg, i) => ({
  name: `engine-order-${pkg}`,
  severity: "error",
  comment: `engines/${pkg} may import only the engine packages below it (ENGINE_ORDER: ${ENGINE_ORDER.slice(0, i).join(", ") || "none"})`,
  from: { path: `^engines/${pkg}/` },
  to: { path: `^engines/(?!(${[...ENGINE_ORDER.slice(0, i + 1)].join("|")})/)[^/]+/` },
}));

/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {

  forbidden: [
    ...enginePackageRules,
    {
      name: "engine-packages-declared",
      severity: "error",
      comment: "every folder of engines/ has a place in ENGINE_ORDER (.dependency-cruiser.cjs)",
      from: { path: "^engines/" },
      to: { path: `^engines/(?!(${ENGINE_ORDER.join("|")})/)[^/]+/` },
    },
    {
      name: "engine-shared-files-at-the-bottom",
      severity: "error",
      comment: "engines/*.ts (errors, ids, paths, host, ...) import no engine package; only engines/svc.ts, the registry, does",
      from: { path: "^engines/[^/]+\\.ts$", pathNot: "^engines/svc\\.ts$" },
      to: { path: "^engines/[^/]+/" },
    },
    {
      name: "engine-registry-on-top",
      severity: "error",
      comment: "engines/svc.ts (the registry of running engines) is imported by no engine",
      from: { path: "^engines/" },
      to: { path: "^engines/svc\\.ts$" },
    },
    {
      name: "engines-not-api",
      severity: "error",
      comment: "engines speak no HTTP: they import neither api/ nor controllers/ (controllers feed engines)",
      from: { path: "^engines/" },
      to: { path: "^(api|controllers)/" },
    },
    {
      name: "controllers-not-api",
      severity: "error",
      comment: "controllers reconcile the store into engines; the HTTP layer sits above them",
      from: { path: "^controllers/" },
      to: { path: "^api/" },
    },
    {
      name: "api-not-controllers",
      severity: "error",
      comment: "api/ is routes and protocol shapes: it reaches engines through Svc.engines and the control plane through Svc.control; only the composition root (boot/) builds controllers",
      from: { path: "^api/" },
      to: { path: "^(controllers|boot)/" },
    },
    {
      name: "manifests-schemas-not-engines",
      severity: "error",
      comment: "manifests/ and schemas/ are the bottom layer: documents and contracts, no running parts",
      from: { path: "^(manifests|schemas)/" },
      to: { path: "^(engines|controllers|api|cli)/" },
    },
    {
      name: "prisma-not-api",
      severity: "error",
      comment: "the store is the bottom layer",
      from: { path: "^prisma/" },
      to: { path: "^(api|cli|controllers|engines)/" },
    },
    {
      name: "no-cycles",
      severity: "error",
      comment: "modules that import each other in a loop (type imports included)",
      from: {},
      to: { circular: true },
    },
  ],
  options: {
    tsPreCompilationDeps: true,
    tsConfig: { fileName: "tsconfig.json" },
    doNotFollow: { path: "node_modules" },
    exclude: { path: "^(node_modules|test|bench|console|dist|generated)/|prisma/generated" },
    enhancedResolveOptions: { extensions: [".ts", ".mts", ".js", ".mjs", ".cjs", ".json"] },
  },
};
