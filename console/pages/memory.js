// Memory: search an agent's facts and episodes.
import { html, useState } from "/console/vendor/preact-htm.js";
import { get, qs } from "/console/lib/api.js";
import { Err, Table, useLoad } from "/console/lib/ui.js";

export default function Memory() {
  const [f, setF] = useState({ agent_id: "", q: "", kind: "all" });
  const [q, setQ] = useState(null);
  const res = useLoad(() => (q ? get(`/memory/search?${qs({ ...q, limit: 50 })}`) : null), [JSON.stringify(q)]);
  const set = (k) => (e) => setF({ ...f, [k]: e.target.value });
  const hits = res.data?.data ?? res.data?.hits ?? [];
  return html`<h1>Memory</h1>
    <form class="row" onSubmit=${(e) => { e.preventDefault(); setQ(f); }}>
      <label>Agent <input name="agent_id" required value=${f.agent_id} onInput=${set("agent_id")} /></label>
      <label>Search <input name="q" value=${f.q} onInput=${set("q")} /></label>
      <label>Kind <select value=${f.kind} onChange=${set("kind")}><option value="all">all</option><option value="facts">facts</option><option value="episodes">episodes</option><option value="transcript">transcript</option></select></label>
      <button class="primary" type="submit">Search</button>
    </form>
    <${Err} error=${res.error} />
    ${q ? html`<div data-testid="memory-hits"><${Table} rows=${hits} caption="memory hits" empty="nothing found" cols=${[
      { label: "Kind", render: (h) => h.kind },
      { label: "Text", render: (h) => h.text ?? h.content ?? JSON.stringify(h) },
      { label: "Status", render: (h) => h.status ?? "" },
      { label: "Salience", num: true, render: (h) => (h.salience != null ? Number(h.salience).toFixed(2) : "–") },
      { label: "Score", num: true, render: (h) => (h.score != null ? Number(h.score).toFixed(3) : "–") },
    ]} /></div>` : null}`;
}
