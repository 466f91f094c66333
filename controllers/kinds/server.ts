// The Server singleton: effective settings (the manifest with defaults, or defaults when no
// Server object exists) into svc.server on every replica (the projection), and the HTTP
// listener bound where they say (the reconcile).
// Explicit start options (--host, --port / SVC_PORT) beat the manifest: the person starting the
// process decided, the same way an env var beats a config file.
import { Value } from "@sinclair/typebox/value";
import type { KindController } from "../types";
import type { Svc } from "../../engines/svc";
import { ServerSpec } from "../../schemas/kinds/server";
import { resolveModelsDir } from "../../engines/paths";

export interface BoundAddress {
  host: string;
  port: number;
}

/** What the composition root (boot/start.ts) gives the controller to move the listener. */
export interface Listener {
  address(): BoundAddress | null;
  /** Listen on host:port (closing the previous socket); resolves with the address bound. */
  bind(host: string, port: number): Promise<BoundAddress>;
}

export interface StartOverrides {
  host?: string;
  port?: number;
}

export function effectiveServer(spec?: unknown): ServerSpec {
  return Value.Default(ServerSpec, structuredClone(spec ?? {})) as ServerSpec;
}

/** loopback exposure forces 127.0.0.1 whatever `host` says; explicit start options win. */
export function desiredAddress(eff: ServerSpec, overrides: StartOverrides): BoundAddress {
  return {
    host: overrides.host ?? (eff.exposure === "loopback" ? "127.0.0.1" : eff.host),
    port: overrides.port ?? eff.port,
  };
}

export function urlOf(a: BoundAddress): string {
  return `http://${a.host.includes(":") ? `[${a.host}]` : a.host}:${a.port}`;
}

function sameAddress(cur: BoundAddress | null, want: BoundAddress): boolean {
  // port 0 means "any free port": an existing ephemeral binding on the same host satisfies it
  return !!cur && cur.host === want.host && (want.port === 0 || cur.port === want.port);
}

export function serverController(
  svc: Svc,
  listener: Listener,
  overrides: StartOverrides,
  /** lets finalize hand over to a remaining Server object that was reported Duplicate */
  enqueue?: (ref: { kind: string; name: string }) => void,
): KindController<"Server"> {
  const settle = (spec: unknown) => {
    const eff = effectiveServer(spec);
    svc.server = eff;
    svc.modelsDir = resolveModelsDir(svc.home, eff.modelsDir);
    return eff;
  };
  const apply = async (spec: unknown) => {
    const want = desiredAddress(settle(spec), overrides);
    const cur = listener.address();
    return sameAddress(cur, want) ? cur! : listener.bind(want.host, want.port);
  };

  // every replica's settings follow the store (CORS, allowed hosts, limits, exchange rates,
  // retention), whichever replica runs the controllers; binding the listener is the reconcile's
  const specs = new Map<string, unknown>();
  return {
    kind: "Server",
    project(name, obj) {
      if (obj) specs.set(name, obj.spec);
      else specs.delete(name);
      const first = [...specs.keys()].sort((a, b) => a.localeCompare(b))[0];
      settle(first === undefined ? undefined : specs.get(first));
    },
    async reconcile(obj, ctx) {
      const first = ctx.store.list({ kind: "Server" }).sort((a, b) => a.name.localeCompare(b.name))[0];
      if (first && first.name !== obj.name) {
        return { status: "False", reason: "Duplicate", message: `only one Server object is used; Server/${first.name} is in effect` };
      }
      let bound: BoundAddress;
      try {
        bound = await apply(obj.spec);
      } catch (e: any) {
        const want = desiredAddress(effectiveServer(obj.spec), overrides);
        return {
          status: "False",
          reason: "BindFailed",
          message: `cannot listen on ${urlOf(want)}: ${e?.code ?? ""} ${e?.message ?? e}`.replace(/\s+/g, " ").trim(),
          requeueAfterMs: 10_000,
        };
      }
      const notes: string[] = [];
      if (overrides.port !== undefined && overrides.port !== svc.server.port) notes.push(`port from start option overrides spec.port ${svc.server.port}`);
      if (overrides.host !== undefined) notes.push("host from start option");
      return {
        status: "True",
        reason: "Listening",
        message: `listening on ${urlOf(bound)}${notes.length ? ` (${notes.join("; ")})` : ""}`,
        extra: { url: urlOf(bound) },
      };
    },
    async finalize(obj, ctx) {
      // The Server in effect is going away: fall back to another Server object, else defaults.
      const rest = ctx.store.list({ kind: "Server" }).filter((o) => o.name !== obj.name);
      if (rest.length > 0) {
        const next = rest.sort((a, b) => a.name.localeCompare(b.name))[0];
        enqueue?.({ kind: "Server", name: next.name });
        return;
      }
      try {
        await apply(undefined);
      } catch (e: any) {
        ctx.log(`could not rebind to the default address after Server/${obj.name} was deleted: ${e?.message ?? e}`);
      }
    },
  };
}
