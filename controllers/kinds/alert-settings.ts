// AlertSettings controller: the singleton's values (with defaults) feed the gateway's alerts.
// project() hands each object to the gateway in the store write; reconcile reports what is in force.
import type { KindController } from "../types";
import type { AlertSettingsSpec } from "../../schemas/kinds/alert-settings";

export { DEFAULT_ALERT_SETTINGS, withAlertDefaults } from "../../engines/gateway/alerts/settings";

export function alertSettingsController(d: { current: () => AlertSettingsSpec; set: (name: string, spec: Partial<AlertSettingsSpec> | undefined) => void }): KindController<"AlertSettings"> {
  return {
    kind: "AlertSettings",
    project(name, obj) {
      d.set(name, obj?.spec);
    },
    async reconcile() {
      const s = d.current();
      return {
        status: "True",
        reason: "InForce",
        message: `budget thresholds ${s.budget_threshold.join("/")}%, failed-auth threshold ${s.failed_auth_threshold}, unusual patterns ${s.unusual_patterns ? "on" : "off"}`,
      };
    },
  };
}
