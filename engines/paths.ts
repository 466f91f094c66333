// Where svc keeps its files. Shared by start-up, engines, controllers and the CLI (it imports
// nothing of svc), so that `svc status` finds the same data dir and store as `svc serve`.
import os from "node:os";
import path from "node:path";

/** Data dir: explicit, else SVC_HOME, else <SVC_TEST_ROOT>/.svc (isolated tests), else ~/.svc. */
export function resolveHome(explicit?: string, env: NodeJS.ProcessEnv = process.env): string {
  if (explicit) return path.resolve(explicit);
  if (env.SVC_HOME) return path.resolve(env.SVC_HOME);
  if (env.SVC_TEST_ROOT) return path.resolve(env.SVC_TEST_ROOT, ".svc");
  return path.join(os.homedir(), ".svc");
}

export const storeFile = (home: string) => path.join(home, "svc.db");

/** Written by a running server once it listens; the CLI reads it to find the port. */
export const serverInfoFile = (home: string) => path.join(home, "server.json");

export interface ServerInfo {
  pid: number;
  url: string;
  port: number;
  startedAt: string;
}

/** Models dir: SVC_MODELS_DIR, else the Server manifest's modelsDir (relative to home), else <home>/models. */
export function resolveModelsDir(home: string, specModelsDir?: string, env: NodeJS.ProcessEnv = process.env): string {
  if (env.SVC_MODELS_DIR) return path.resolve(env.SVC_MODELS_DIR);
  if (specModelsDir) return path.resolve(home, specModelsDir.replace(/^~(?=$|\/)/, os.homedir()));
  return path.join(home, "models");
}

/** Where a Model's file is: absolute as given (~ expanded), else inside the models dir. */
export function resolveModelFile(svc: { modelsDir: string }, file: string): string {
  const f = file.replace(/^~(?=$|\/)/, os.homedir());
  return path.resolve(svc.modelsDir, f);
}

export const DEFAULT_PORT = 1337;
