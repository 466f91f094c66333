// Config: the exported state; a document pasted or uploaded -> its plan as a diff -> apply, with
// the high-risk confirmation. Applying is offered to full access only; /admin/config itself
// answers on loopback only.
import { html, useState } from "/console/vendor/preact-htm.js";
import { api, getText } from "/console/lib/api.js";
import { Badge, Err, useLoad } from "/console/lib/ui.js";
import { ReplayView } from "/console/pages/replay-view.js";

const show = (v) => (v === undefined ? "" : typeof v === "string" ? v : JSON.stringify(v));

function PlanView({ plan }) {
  const s = plan.summary;
  return html`<section aria-labelledby="plan-h" data-testid="plan">
    <h2 id="plan-h">Plan against revision ${plan.revision}: ${s.create} to create, ${s.update} to update, ${s.delete} to delete, ${s.unchanged} unchanged</h2>
    ${plan.warnings?.map((w) => html`<p class="note">warning: ${w.message}</p>`)}
    ${plan.changes.filter((c) => c.action !== "unchanged").map((c) => html`<div class="card">
      <p><${Badge} v=${c.action} /> <b>${c.kind}/${c.name}</b> <span class="note">owner ${c.owner}</span>
        ${c.highRisk ? html` <span class="badge warn">high risk: ${c.highRisk}</span>` : ""}</p>
      ${c.fields?.length ? html`<table class="diff"><thead><tr><th scope="col">Field</th><th scope="col">Before</th><th scope="col">After</th></tr></thead>
        <tbody>${c.fields.map((f) => html`<tr><td><code>${f.path}</code></td><td class="before"><code>${show(f.before)}</code></td><td class="after"><code>${show(f.after)}</code></td></tr>`)}</tbody></table>` : null}
    </div>`)}
  </section>`;
}

export default function Config({ me }) {
  const exported = useLoad(() => getText("/admin/config/export"));
  const [doc, setDoc] = useState("");
  const [plan, setPlan] = useState(null);
  const [replayWindow, setReplayWindow] = useState("");
  const [replay, setReplay] = useState(null);
  const [confirm, setConfirm] = useState(false);
  const [error, setError] = useState(null);
  const [done, setDone] = useState(null);
  const full = me.key.access_level === "full";
  const upload = (e) => { const file = e.target.files?.[0]; if (file) file.text().then(setDoc); };
  const makePlan = async (e) => {
    e.preventDefault();
    setError(null); setDone(null); setPlan(null); setReplay(null); setConfirm(false);
    try {
      const r = await api("POST", "/admin/config/plan", replayWindow ? { document: doc, replay: replayWindow } : { document: doc });
      setPlan(r.plan); setReplay(r.replay ?? null);
    } catch (err) { setError(err); }
  };
  const apply = async () => {
    setError(null);
    try {
      const r = await api("POST", "/admin/config/apply", { plan, confirm });
      setDone(r); setPlan(null); exported.reload();
    } catch (err) { setError(err); }
  };
  const risky = plan?.changes.some((c) => c.highRisk && c.action !== "unchanged");
  const changes = plan ? plan.summary.create + plan.summary.update + plan.summary.delete : 0;
  return html`<h1>Configuration</h1>
    <h2>Plan a document</h2>
    <form onSubmit=${makePlan}>
      <label>Manifest YAML (one or more documents) <textarea name="document" value=${doc} onInput=${(e) => setDoc(e.target.value)} spellcheck="false"></textarea></label>
      <div class="row"><label>Or upload a file <input type="file" accept=".yaml,.yml,.json,text/yaml" onChange=${upload} /></label>
      <label>Replay recorded traffic <select name="replay" value=${replayWindow} onChange=${(e) => setReplayWindow(e.target.value)}>
        <option value="">no replay</option><option value="1h">last hour</option><option value="24h">last 24 hours</option><option value="7d">last 7 days</option><option value="30d">last 30 days</option></select></label>
      <button class="primary" type="submit" disabled=${!doc.trim()}>Plan</button></div>
    </form>
    <${Err} error=${error} />
    ${plan ? html`<${PlanView} plan=${plan} />
      ${replay ? html`<${ReplayView} replay=${replay} />` : null}
      ${changes === 0 ? html`<p>No changes.</p>` : full ? html`<div class="row">
        ${risky ? html`<label class="inline"><input type="checkbox" checked=${confirm} onChange=${(e) => setConfirm(e.target.checked)} /> I confirm the high-risk changes</label>` : null}
        <button class="danger" type="button" disabled=${risky && !confirm} onClick=${apply}>Apply ${changes} change(s)</button></div>`
      : html`<p class="note">Applying needs a key with full access.</p>`}` : null}
    ${done ? html`<p role="status">Applied ${done.applied} change(s); the store is at revision ${done.revision}.</p>` : null}
    <h2>Exported state</h2>
    <${Err} error=${exported.error} />
    ${exported.data != null ? html`<pre data-testid="export">${exported.data}</pre>` : null}`;
}
