// AlertSettings controller: the singleton's values (with defaults) feed the gateway's alerts.
// The gateway reads the current object from the store on change; this reports what is in force.
import type { KindController } from "../types";
import type { AlertSettingsSpec } from "../../schemas/kinds/alert-settings";

export { DEFAULT_ALERT_SETTINGS, withAlertDefaults } from "../../engines/gateway/alerts/settings";

export function alertSettingsController(d: { current: () => AlertSettingsSpec; refresh: () => void }): KindController<"AlertSettings"> {
  return {
    kind: "AlertSettings",
    async reconcile() {
      d.refresh();
      const s = d.current();
      return {
        status: "True",
        reason: "InForce",
        message: `budget thresholds ${s.budget_threshold.join("/")}%, failed-auth threshold ${s.failed_auth_threshold}, unusual patterns ${s.unusual_patterns ? "on" : "off"}`,
      };
    },
    async finalize() {
      d.refresh();
    },
  };
}
