// AccessPolicy controller: the one path from the store to the policy index
// (engines/gateway/policy.ts), fed in the store write by project(); reconcile checks what a schema
// cannot (time zones), re-checks the keys that bind the policy, and reports Ready.
import type { KindController } from "../types";
import type { PolicyIndex } from "../../engines/gateway/policy";
import { minutesInZone } from "../../engines/gateway/policy";

export function accessPolicyController(d: { policies: PolicyIndex; /** re-check keys that bind this policy (their PolicyNotFound status) */ touchKeys?: (policy: string) => void }): KindController<"AccessPolicy"> {
  return {
    kind: "AccessPolicy",
    project(name, obj) {
      if (obj) d.policies.put(name, obj.spec);
      else d.policies.remove(name);
    },
    async reconcile(obj) {
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
      d.touchKeys?.(obj.name);
    },
  };
}
