// AlertSettings in force: the singleton's values over these defaults (the AlertSettings
// controller, controllers/kinds/alert-settings.ts, reports them as its status).
import type { AlertSettingsSpec } from "../../../schemas/kinds/alert-settings";

export const DEFAULT_ALERT_SETTINGS: AlertSettingsSpec = {
  budget_threshold: [50, 80, 100],
  rate_limit_percentage: 90,
  failed_auth_threshold: 10,
  unusual_patterns: true,
};

export function withAlertDefaults(spec: Partial<AlertSettingsSpec> | undefined): AlertSettingsSpec {
  return { ...DEFAULT_ALERT_SETTINGS, ...(spec ?? {}) };
}
