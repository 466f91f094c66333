// The runner's task lease (engines/agents/task-lease.ts) at shutdown: stop() waits for the
// heartbeat in flight, and what that heartbeat brings back (a cancel request, a lost task) is
// left to the closing manager: nothing acts on tasks or sweeps the store after stop().
import { describe, expect, it } from "vitest";
import { TaskLease } from "../../engines/agents/task-lease";
import type { TaskRepo, TaskSignals } from "../../prisma/repos/tasks";

function repo() {
  let release!: (s: TaskSignals) => void;
  const calls = { heartbeat: 0, sweeps: 0 };
  const r = {
    shared: true,
    heartbeat: () => {
      calls.heartbeat++;
      return new Promise<TaskSignals>((res) => (release = res));
    },
    interruptOrphans: async () => {
      calls.sweeps++;
      return [];
    },
  } as unknown as TaskRepo;
  return { r, calls, release: (s: TaskSignals) => release(s) };
}

describe("task lease", () => {
  it("stop() resolves only after the heartbeat in flight, which then acts on nothing", async () => {
    const { r, calls, release } = repo();
    const acted: string[] = [];
    const lease = new TaskLease(r, "replica-a", {
      local: () => [{ id: "t1", admittedAt: 0 }],
      cancel: (id) => acted.push(`cancel ${id}`),
      answer: (id) => acted.push(`answer ${id}`),
      lost: (id) => acted.push(`lost ${id}`),
      warn: () => undefined,
    });
    void lease.tick();
    expect(calls.heartbeat).toBe(1);
    let stopped = false;
    const stopping = lease.stop().then(() => (stopped = true));
    await new Promise((res) => setTimeout(res, 20));
    expect(stopped).toBe(false); // the heartbeat is still out
    // it comes back with a cancel request for t1, and without t1 among the owned rows
    release({ owned: new Set(), requests: [{ id: "t1", cancel: true, answer: null }] });
    await stopping;
    expect(acted).toEqual([]);
    expect(calls.sweeps).toBe(0);
    await lease.tick(); // a timer that fired late does nothing either
    expect(calls.heartbeat).toBe(1);
  });

  it("while running, a heartbeat delivers requests and sweeps orphans", async () => {
    const { r, calls, release } = repo();
    const acted: string[] = [];
    const lease = new TaskLease(r, "replica-a", {
      local: () => [{ id: "t1", admittedAt: 0 }],
      cancel: (id) => acted.push(`cancel ${id}`),
      answer: (id, a) => acted.push(`answer ${id} ${a}`),
      lost: (id) => acted.push(`lost ${id}`),
      warn: () => undefined,
    });
    const beat = lease.tick();
    release({ owned: new Set(["t1"]), requests: [{ id: "t1", cancel: false, answer: '{"text":"Paris"}' }] });
    await beat;
    expect(acted).toEqual(['answer t1 {"text":"Paris"}']);
    expect(calls.sweeps).toBe(1);
    await lease.stop();
  });
});
