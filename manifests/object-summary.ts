// How an object shows in `svc status`, `svc doctor` and GET /admin/config/status: identity,
// generations and the Ready condition, plus the Model file doctor checks. Never a secret.
import type { StoredObject } from "../prisma/resource-store";

export function objectSummary(o: StoredObject) {
  // an API-made key is stored under its id: its descriptive name goes beside it
  const label = o.kind === "ApiKey" && typeof o.spec?.name === "string" && o.spec.name !== o.name ? (o.spec.name as string) : undefined;
  return {
    kind: o.kind,
    name: o.name,
    ...(label ? { label } : {}),
    owner: o.owner,
    generation: o.generation,
    observedGeneration: o.status?.observedGeneration ?? null,
    deleting: o.deleting,
    ready: o.status?.conditions?.find((c) => c.type === "Ready") ?? null,
    spec: o.kind === "Model" ? { file: o.spec?.file as string | undefined, ...(o.spec?.source ? { source: o.spec.source as string } : {}) } : undefined,
    // a Model being downloaded: bytes, total and rate (controllers/kinds/model-source.ts)
    ...(o.kind === "Model" && o.status?.download ? { download: o.status.download } : {}),
  };
}
