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

/** The settings in force among AlertSettings objects by name: the first by name over the
 * defaults; with none, the defaults without near-limit warnings (rate_limit_percentage is opt-in). */
export function settingsInForce(objects: ReadonlyMap<string, Partial<AlertSettingsSpec>>): AlertSettingsSpec {
  const first = [...objects.keys()].sort((a, b) => a.localeCompare(b))[0];
  return first !== undefined ? withAlertDefaults(objects.get(first)) : { ...withAlertDefaults(undefined), rate_limit_percentage: 0 };
}
