// `NODE_OPTIONS=--import ./malloc-env-probe.mjs bin/svc.mjs`: prints the MALLOC_ARENA_MAX node
// started with and node's pid (the pid the test spawned when env exec'd node), then exits.
process.stdout.write(JSON.stringify({ MALLOC_ARENA_MAX: process.env.MALLOC_ARENA_MAX ?? null, pid: process.pid }) + "\n");
process.exit(0);
