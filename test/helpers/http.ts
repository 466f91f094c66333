// Small fetch helpers for tests.
export async function postJson(url: string, body: unknown, headers: Record<string, string> = {}) {
  const res = await fetch(url, { method: "POST", headers: { "content-type": "application/json", ...headers }, body: JSON.stringify(body) });
  const text = await res.text();
  let json: any;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  return { status: res.status, json, text, headers: res.headers };
}

export async function getText(url: string, headers: Record<string, string> = {}) {
  const res = await fetch(url, { headers });
  return { status: res.status, text: await res.text(), headers: res.headers };
}

export function until(cond: () => boolean, timeoutMs = 10_000, stepMs = 20): Promise<void> {
  const end = Date.now() + timeoutMs;
  return new Promise((resolve, reject) => {
    const tick = () => {
      if (cond()) return resolve();
      if (Date.now() > end) return reject(new Error("timed out waiting for condition"));
      setTimeout(tick, stepMs);
    };
    tick();
  });
}

/** Poll an async condition (a request, a query) until it holds; rejects after timeoutMs. */
export async function eventually(cond: () => Promise<boolean>, timeoutMs = 10_000, stepMs = 25): Promise<void> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    if (await cond()) return;
    if (Date.now() > end) throw new Error("timed out waiting for condition");
    await new Promise((r) => setTimeout(r, stepMs));
  }
}
