// vitest's global setup: the suites that run the `svc` command run the compiled dist/ (bin/svc.mjs),
// so it is rebuilt first when a source changed since the last build (`npm test` always builds).
import { execFileSync } from "node:child_process";
import path from "node:path";
import { fileURLToPath } from "node:url";

export default function setup(): void {
  const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
  execFileSync(process.execPath, [path.join(root, "bin/build.mjs"), "--if-stale"], { cwd: root, stdio: ["ignore", "inherit", "inherit"] });
}
