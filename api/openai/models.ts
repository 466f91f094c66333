// Model discovery in the OpenAI shape, from the pipeline's listing (what the caller may use).
import type { ModelListing } from "../../engines/gateway/pipeline-types";

export const modelObject = (m: ModelListing) => ({ id: m.id, object: "model" as const, created: m.created, owned_by: m.provider });

export function modelList(models: ModelListing[]) {
  return { object: "list" as const, data: models.map(modelObject) };
}
