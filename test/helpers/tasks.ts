// Polling a detached task (GET /tasks/{id}) until a condition holds, for the agent and memory tests.
import type { Env } from "../gateway/fixtures";

/** The task's view once `cond` holds; throws with the last view after `timeoutMs`. */
export async function pollTask(env: Env, id: string, cond: (t: any) => boolean, timeoutMs = 20_000, key = env.adminKey): Promise<any> {
  const end = Date.now() + timeoutMs;
  let last: any;
  for (;;) {
    const r = await env.api("GET", `/tasks/${id}`, undefined, key);
    last = r.json;
    if (r.status === 200 && cond(last)) return last;
    if (Date.now() > end) throw new Error(`task ${id} never reached the condition; last: ${JSON.stringify(last)}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}
