// The layering of DESIGN.md ("Layout"), checked in CI (npm run lint:deps): imports point one way,
// cli/api -> controllers/engines -> manifests/schemas/prisma, and no module imports itself back
// (api/ itself reaches engines only through Svc.engines: boot/ is the one module that builds
// controllers and hands them their engines)
// through a loop. Type-only imports count too (tsPreCompilationDeps), so a `import type` cannot
// smuggle a dependency the other way. No exceptions are listed here on purpose.
/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
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
