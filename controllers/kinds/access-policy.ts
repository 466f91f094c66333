// AccessPolicy controller: the policy index follows the store (engines/gateway/policy.ts); this
// controller checks what a schema cannot (time zones) and reports Ready.
import type { KindController } from "../types";
import type { PolicyIndex } from "../../engines/gateway/policy";
import { minutesInZone } from "../../engines/gateway/policy";

export function accessPolicyController(d: { policies: PolicyIndex; /** re-check keys that bind this policy (their PolicyNotFound status) */ touchKeys?: (policy: string) => void }): KindController<"AccessPolicy"> {
  return {
    kind: "AccessPolicy",
    async reconcile(obj) {
      d.policies.refresh(obj.name);
      d.touchKeys?.(obj.name);
      const doc = obj.spec;
      for (const [i, s] of (doc.statements ?? []).entries()) {
        const tz = s.condition?.time_between?.timezone;
        if (!tz) continue;
        try {
          minutesInZone(0, tz);
        } catch {
          return { status: "False", reason: "InvalidTimeZone", message: `statement #${i + 1}: unknown time zone ${JSON.stringify(tz)} (its time_between never holds)` };
        }
      }
      const n = doc.statements?.length ?? 0;
      return { status: "True", reason: "Indexed", message: `${n} statement${n === 1 ? "" : "s"}` };
    },
    async finalize(obj) {
      d.policies.refresh(obj.name);
      d.touchKeys?.(obj.name);
    },
  };
}
