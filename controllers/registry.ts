// Which controller reconciles which kind, for one running svc. Kinds no engine claims get the
// accepted controller, so every stored object reports a truthful condition.
import type { Controller } from "./types";
import type { Svc } from "../engines/svc";
import { kinds } from "../schemas";
import { acceptedController } from "./kinds/accepted";
import { serverController, type Listener, type StartOverrides } from "./kinds/server";
import { modelController } from "./kinds/model";
import { mcpServerController } from "./kinds/mcp-server";
import { agentController } from "./kinds/agent";
import { memoryConfigController } from "./kinds/memory-config";
import { apiKeyController } from "./kinds/api-key";
import { accessPolicyController } from "./kinds/access-policy";
import { providerController } from "./kinds/provider";
import { alertSettingsController } from "./kinds/alert-settings";

export interface RegistryInput {
  svc: Svc;
  listener: Listener;
  overrides: StartOverrides;
  enqueue?: (ref: { kind: string; name: string }) => void;
}

export interface ControllerSet {
  controllers: Controller[];
  fallback: Controller;
  /** kind -> "server" | "model" | "gateway" | "accepted", for logs and `svc doctor` */
  owners: Record<string, string>;
}

export async function buildControllers(input: RegistryInput): Promise<ControllerSet> {
  const list: Array<[Controller, string]> = [[serverController(input.svc, input.listener, input.overrides, input.enqueue), "server"]];
  list.push([modelController(input.svc), "model"]);
  if (input.svc.engines.mcp) list.push([mcpServerController(input.svc.engines.mcp), "mcp"]);
  list.push([agentController(input.svc, input.enqueue), "agents"]);
  if (input.svc.engines.memory) list.push([memoryConfigController(input.svc.engines.memory), "memory"]);
  for (const c of gatewayControllers(input.svc)) list.push([c, "gateway"]);

  const controllers: Controller[] = [];
  const owners: Record<string, string> = {};
  for (const [c, owner] of list) {
    if (owners[c.kind]) continue; // first claim wins: the Server controller cannot be replaced
    owners[c.kind] = owner;
    controllers.push(c);
  }
  for (const k of kinds) {
    if (owners[k]) continue;
    owners[k] = "accepted";
    controllers.push(acceptedController(k));
  }
  return { controllers, fallback: acceptedController(), owners };
}

/** ApiKey, AccessPolicy, Provider and AlertSettings feed the gateway engine (when it runs). */
function gatewayControllers(svc: Svc): Controller[] {
  const gw = svc.engines.gateway;
  if (!gw) return [];
  return [
    apiKeyController({ keys: gw.keys, policies: gw.policies, limits: gw.limits, now: gw.gate.now }),
    accessPolicyController({
      policies: gw.policies,
      touchKeys: (name) => {
        const mgr = svc.control;
        if (!mgr) return;
        for (const k of gw.keys.all()) if (k.spec.policies?.includes(name)) mgr.enqueue({ kind: "ApiKey", name: k.id });
      },
    }),
    providerController({ router: gw.router, hasLocalPool: () => !!svc.engines.pool }),
    alertSettingsController({ current: () => gw.alertSettings(), set: (name, spec) => gw.setAlertSettings(name, spec) }),
  ];
}
