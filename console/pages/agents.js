// Agents and tasks: the agents, and a task by id with its status and steps, cancel and answer.
import { html, useEffect, useState } from "/console/vendor/preact-htm.js";
import { api, get } from "/console/lib/api.js";
import { Badge, Err, Table, useLoad } from "/console/lib/ui.js";

function Task({ id }) {
  const [answer, setAnswer] = useState("");
  const [error, setError] = useState(null);
  const { data: t, error: loadErr, reload } = useLoad(() => get(`/tasks/${encodeURIComponent(id)}`), [id]);
  const open = t && ["queued", "running", "input_required"].includes(t.status);
  // live status: poll while the task is unfinished
  useEffect(() => {
    if (!open) return;
    const h = setInterval(reload, 2000);
    return () => clearInterval(h);
  }, [open]);
  const act = async (f) => { setError(null); try { await f(); reload(); } catch (e) { setError(e); } };
  if (loadErr) return html`<${Err} error=${loadErr} />`;
  if (!t) return html`<p class="loading">Loading…</p>`;
  return html`<section class="card" aria-labelledby="task-h">
    <h2 id="task-h">Task ${t.id ?? id} <${Badge} v=${t.status} /></h2>
    <button type="button" onClick=${reload}>Refresh</button>
    ${open ? html` <button class="danger" type="button" onClick=${() => act(() => api("DELETE", `/tasks/${encodeURIComponent(id)}`))}>Cancel task</button>` : null}
    ${t.status === "input_required" ? html`<form class="row" onSubmit=${(e) => { e.preventDefault(); act(() => api("POST", `/tasks/${encodeURIComponent(id)}/clarify`, { response: answer })); }}>
      <label>Answer the clarification <input value=${answer} onInput=${(e) => setAnswer(e.target.value)} /></label><button class="primary" type="submit">Send</button></form>` : null}
    <${Err} error=${error} />
    <pre>${JSON.stringify(t, null, 2)}</pre>
  </section>`;
}

export default function Agents() {
  const { data, error } = useLoad(() => get("/agents"));
  const [id, setId] = useState("");
  const [shown, setShown] = useState("");
  return html`<h1>Agents and tasks</h1>
    <${Err} error=${error} />
    ${data ? html`<${Table} rows=${data.data} caption="agents" empty="no agents" cols=${[
      { label: "Agent", render: (a) => a.display_name ?? a.id },
      { label: "Default model", render: (a) => a.default_model ?? "–" },
      { label: "Description", render: (a) => a.description ?? "" },
    ]} />` : null}
    <h2>Task</h2>
    <form class="row" onSubmit=${(e) => { e.preventDefault(); setShown(id.trim()); }}>
      <label>Task id <input value=${id} onInput=${(e) => setId(e.target.value)} /></label><button type="submit">Show</button>
    </form>
    ${shown ? html`<${Task} id=${shown} />` : null}`;
}
