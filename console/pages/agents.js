// Agents and tasks: the agents, the task list (GET /tasks, polled while the page is open), and a
// task's status and steps, with cancel and the answer to a clarification or approval.
import { html, useEffect, useState } from "/console/vendor/preact-htm.js";
import { api, get, qs } from "/console/lib/api.js";
import { Badge, Err, Table, useLoad, when } from "/console/lib/ui.js";

const UNFINISHED = ["queued", "running", "input_required"];
const STATUSES = [...UNFINISHED, "completed", "failed", "cancelled"];
const POLL_MS = 2000;

/** Reload every POLL_MS while `on`. */
function usePoll(reload, on = true) {
  useEffect(() => {
    if (!on) return;
    const h = setInterval(reload, POLL_MS);
    return () => clearInterval(h);
  }, [on]);
}

/** A step of the task's activity, in a few words. */
function stepText(s) {
  const { seq, type, at, ...rest } = s;
  if (type === "status") return `${rest.status}${rest.reason ? ` (${rest.reason})` : ""}${rest.cancel_requested ? ", cancel requested" : ""}`;
  if (type === "tool_call") return `${rest.tool} ${rest.arguments ?? ""}`;
  if (type === "tool_result") return `${rest.tool}: ${rest.outcome ?? ""} ${rest.content ?? ""}`;
  if (type === "text") return rest.text ?? "";
  if (type === "step") return `model call ${rest.iteration} of ${rest.max_iterations}`;
  if (type === "input_required") return rest.kind === "approval" ? "waits for an approval" : "asks a question";
  if (type === "answer") return rest.kind === "approval" ? (rest.approved ? "approved" : "denied") : `answered: ${rest.response ?? ""}`;
  return JSON.stringify(rest);
}

function Answer({ t, act }) {
  const [text, setText] = useState("");
  const p = t.pending;
  const path = `/tasks/${encodeURIComponent(t.id)}/clarify`;
  if (p?.kind === "approval") {
    return html`<div class="card" data-testid="pending">
      <p>Waits for approval of <code>${p.tool}</code> with <code>${JSON.stringify(p.arguments)}</code></p>
      <button class="primary" type="button" onClick=${() => act(() => api("POST", path, { approve: true }))}>Approve</button>
      <button type="button" onClick=${() => act(() => api("POST", path, { approve: false }))}>Deny</button>
    </div>`;
  }
  return html`<form class="row card" data-testid="pending" onSubmit=${(e) => { e.preventDefault(); act(() => api("POST", path, { response: text })); }}>
    <label>${p?.question ?? "Answer"} <input name="answer" aria-label="Answer the clarification" required value=${text} onInput=${(e) => setText(e.target.value)} /></label>
    <button class="primary" type="submit">Send answer</button>
  </form>`;
}

function Task({ id, onChange }) {
  const [error, setError] = useState(null);
  const [confirm, setConfirm] = useState(false);
  const { data: t, error: loadErr, reload } = useLoad(() => get(`/tasks/${encodeURIComponent(id)}`), [id]);
  const open = t && UNFINISHED.includes(t.status);
  usePoll(reload, !!open); // live status while the task is unfinished
  const act = async (f) => { setError(null); try { await f(); setConfirm(false); reload(); onChange?.(); } catch (e) { setError(e); } };
  if (loadErr) return html`<${Err} error=${loadErr} />`;
  if (!t) return html`<p class="loading">Loading…</p>`;
  const out = t.result?.output ?? t.result?.message ?? t.result?.error?.message;
  return html`<section class="card" aria-labelledby="task-h" data-testid="task-detail">
    <h2 id="task-h">Task <code>${t.id}</code> <${Badge} v=${t.status} /></h2>
    <p>${t.agent}${t.title ? ` · ${t.title}` : ""} · step ${t.progress?.iterations ?? 0}${t.progress?.max_iterations ? ` of ${t.progress.max_iterations}` : ""}${t.current_step ? ` · ${t.current_step}` : ""}${t.reason ? ` · ${t.reason}` : ""}</p>
    ${t.status === "input_required" ? html`<${Answer} t=${t} act=${act} />` : null}
    ${open && !confirm ? html`<button class="danger" type="button" onClick=${() => setConfirm(true)}>Cancel task…</button>` : null}
    ${open && confirm ? html`<span role="group" aria-label="confirm cancel">Stop this task? <button class="danger" type="button" onClick=${() => act(() => api("DELETE", `/tasks/${encodeURIComponent(id)}`))}>Yes, cancel</button> <button type="button" onClick=${() => setConfirm(false)}>No</button></span>` : null}
    <${Err} error=${error} />
    ${out != null ? html`<h3>Result</h3><pre data-testid="task-result">${String(out)}</pre>` : null}
    <h3>Recent steps</h3>
    <${Table} rows=${t.recent_activity ?? []} caption="recent steps" empty="no steps yet" cols=${[
      { label: "#", num: true, render: (s) => s.seq },
      { label: "At", render: (s) => when(s.at) },
      { label: "Step", render: (s) => s.type },
      { label: "Detail", render: (s) => stepText(s) },
    ]} />
  </section>`;
}

function Tasks({ agents }) {
  const [f, setF] = useState({ agent: "", status: "" });
  const [pages, setPages] = useState(1);
  const [shown, setShown] = useState("");
  // the first `pages` pages, re-read on each poll so statuses stay live
  const list = useLoad(async () => {
    let data = [];
    let cursor;
    let more = false;
    for (let i = 0; i < pages; i++) {
      const r = await get(`/tasks?${qs({ ...f, limit: 25, cursor })}`);
      data = data.concat(r.data);
      more = r.has_more;
      cursor = r.next_cursor;
      if (!more) break;
    }
    return { data, more };
  }, [JSON.stringify(f), pages]);
  usePoll(list.reload);
  const set = (k) => (e) => { setPages(1); setF({ ...f, [k]: e.target.value }); };
  return html`<h2>Tasks</h2>
    <div class="row">
      <label>Agent <select value=${f.agent} onChange=${set("agent")}><option value="">all</option>${agents.map((a) => html`<option value=${a.id}>${a.id}</option>`)}</select></label>
      <label>Status <select value=${f.status} onChange=${set("status")}><option value="">all</option>${STATUSES.map((s) => html`<option value=${s}>${s}</option>`)}</select></label>
    </div>
    <${Err} error=${list.error} />
    <div data-testid="task-table"><${Table} rows=${list.data?.data ?? []} caption="tasks" empty=${list.loading && !list.data ? "Loading…" : "no tasks"} onRow=${(t) => setShown(t.id)} cols=${[
      { label: "Task", render: (t) => html`<code>${t.id}</code>` },
      { label: "Agent", render: (t) => t.agent },
      { label: "Title", render: (t) => t.title ?? "" },
      { label: "Status", render: (t) => html`<${Badge} v=${t.status} />` },
      { label: "Key", render: (t) => t.key_name ?? t.key_id ?? "(no key)" },
      { label: "Created", render: (t) => when(t.created_at) },
      { label: "Updated", render: (t) => when(t.updated_at) },
    ]} /></div>
    ${list.data?.more ? html`<button type="button" onClick=${() => setPages(pages + 1)}>Older tasks</button>` : null}
    ${shown ? html`<${Task} id=${shown} onChange=${list.reload} />` : null}`;
}

export default function Agents() {
  const { data, error } = useLoad(() => get("/agents"));
  return html`<h1>Agents and tasks</h1>
    <${Err} error=${error} />
    ${data ? html`<${Table} rows=${data.data} caption="agents" empty="no agents" cols=${[
      { label: "Agent", render: (a) => a.display_name ?? a.id },
      { label: "Default model", render: (a) => a.default_model ?? "–" },
      { label: "Ready", render: (a) => (a.ready ? "yes" : `no: ${a.reason ?? ""}`) },
      { label: "Description", render: (a) => a.description ?? "" },
    ]} />` : null}
    <${Tasks} agents=${data?.data ?? []} />`;
}
