// The honest default for kinds whose engine is not in this build yet (Agent, McpServer,
// MemoryConfig, ...): the object is validated and stored, and its status says so. It never
// claims Ready=True for something that does nothing.
import type { Controller } from "../types";

export const NOT_IMPLEMENTED = "NotImplemented";

export function acceptedController(kind = "*"): Controller {
  return {
    kind,
    async reconcile(obj) {
      return {
        status: "False",
        reason: NOT_IMPLEMENTED,
        message: `accepted and stored; ${obj.kind} engine not available in this build`,
      };
    },
  };
}
