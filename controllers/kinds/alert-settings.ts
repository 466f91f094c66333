// AlertSettings controller: the singleton's values (with defaults) feed the gateway's alerts.
// The gateway reads the current object from the store on change; this reports what is in force.
import type { Controller } from "../types";
import type { AlertSettingsSpec } from "../../schemas/kinds/alert-settings";

export const DEFAULT_ALERT_SETTINGS: AlertSettingsSpec = {
  budget_threshold: [50, 80, 100],
  rate_limit_percentage: 90,
  failed_auth_threshold: 10,
  unusual_patterns: true,
};

export function withAlertDefaults(spec: Partial<AlertSettingsSpec> | undefined): AlertSettingsSpec {
  return { ...DEFAULT_ALERT_SETTINGS, ...(spec ?? {}) };
}

export function alertSettingsController(d: { current: () => AlertSettingsSpec; refresh: () => void }): Controller {
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
