// Provider controller: the one path from the store to the router (engines/providers/router.ts),
// fed in the store write by project(); reconcile checks the credential and header references
// resolve and reports Ready:
//   Ready=True  Registered        "N models"
//   Ready=False CredentialMissing the env variable / file of a reference is missing (requests
//                                 routed here fail with 502 upstream_error, or fall back; its
//                                 models are left out of /v1/models and /api/tags meanwhile)
import type { KindController } from "../types";
import type { ProviderRouter } from "../../engines/providers/router";
import { describeMissing } from "../../engines/providers/credentials";

export function providerController(d: { router: ProviderRouter; hasLocalPool?: () => boolean }): KindController<"Provider"> {
  return {
    kind: "Provider",
    project(name, obj) {
      if (obj) d.router.putProvider(name, obj.spec);
      else d.router.removeProvider(name);
    },
    terminal({ reason, message }) {
      if (reason !== "CredentialMissing") return undefined;
      const env = /environment variable ([A-Za-z_][A-Za-z0-9_]*)/.exec(message)?.[1];
      if (env) return `set ${env} in svc's environment and restart svc (it reads its environment once, at start)`;
      const file = /file (\S+) is missing/.exec(message)?.[1];
      return file ? `write the secret to ${file} (svc checks again every 30 s)` : "fix the reference in the Provider and apply it again";
    },
    async reconcile(obj) {
      const s = obj.spec;
      const n = s.models?.length ?? 0;
      const models = `${n} model${n === 1 ? "" : "s"}`;
      if (s.credential) {
        const why = describeMissing(s.credential);
        if (why) return { status: "False", reason: "CredentialMissing", message: `credential ${s.credential}: ${why}`, requeueAfterMs: 30_000 };
      }
      for (const [h, ref] of Object.entries(s.headers ?? {})) {
        const why = describeMissing(ref);
        if (why) return { status: "False", reason: "CredentialMissing", message: `header ${h} (${ref}): ${why}`, requeueAfterMs: 30_000 };
      }
      if (s.type === "local" && d.hasLocalPool && !d.hasLocalPool()) {
        return { status: "False", reason: "LocalInferenceUnavailable", message: `${models}; local inference is not running in this server` };
      }
      return { status: "True", reason: "Registered", message: models, extra: { models: n } };
    },
  };
}
