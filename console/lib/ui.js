// Small shared pieces: formatting, a data-loading hook, tables, bars and uPlot charts.
import { html, useEffect, useRef, useState, useCallback } from "/console/vendor/preact-htm.js";
import uPlot from "/console/vendor/uplot.js";

export const usd = (n) => (n == null ? "–" : `$${Number(n).toFixed(n !== 0 && Math.abs(n) < 0.01 ? 6 : 2)}`);
export const int = (n) => (n == null ? "–" : Number(n).toLocaleString("en-US"));
export const when = (s) => (s ? new Date(s).toISOString().replace("T", " ").slice(0, 19) + "Z" : "–");
export const dayStart = (d = new Date()) => new Date(Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), d.getUTCDate()));
export const monthStart = (d = new Date()) => new Date(Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), 1));

/** Run `load` when deps change; returns {data, error, loading, reload}. */
export function useLoad(load, deps = []) {
  const [state, setState] = useState({ data: null, error: null, loading: true });
  const [tick, setTick] = useState(0);
  useEffect(() => {
    let live = true;
    setState((s) => ({ ...s, loading: true }));
    Promise.resolve().then(load).then(
      (data) => live && setState({ data, error: null, loading: false }),
      (error) => live && setState({ data: null, error, loading: false }),
    );
    return () => { live = false; };
  }, [...deps, tick]);
  const reload = useCallback(() => setTick((t) => t + 1), []);
  return { ...state, reload };
}

export const Err = ({ error }) => (error ? html`<div class="err" role="alert">${error.message ?? String(error)}${error.code ? html` <span class="note">(${error.code})</span>` : ""}</div>` : null);

export const Badge = ({ v }) => html`<span class=${`badge ${v}`}>${String(v)}</span>`;

/** A table of rows; cols: [{key, label, num?, render?}]. onRow makes rows keyboard-selectable. */
export function Table({ rows, cols, onRow, caption, empty = "nothing yet" }) {
  if (!rows?.length) return html`<p class="note">${empty}</p>`;
  const key = (e) => { if (e.key === "Enter" || e.key === " ") { e.preventDefault(); e.currentTarget.click(); } };
  return html`<table>
    ${caption ? html`<caption class="sr-only">${caption}</caption>` : null}
    <thead><tr>${cols.map((c) => html`<th scope="col" class=${c.num ? "num" : ""}>${c.label}</th>`)}</tr></thead>
    <tbody>${rows.map((r, i) => html`<tr key=${r.id ?? i} class=${onRow ? "clickable" : ""} tabindex=${onRow ? 0 : undefined} onClick=${onRow ? () => onRow(r) : undefined} onKeyDown=${onRow ? key : undefined}>
      ${cols.map((c) => html`<td class=${c.num ? "num" : ""}>${c.render ? c.render(r) : r[c.key] ?? "–"}</td>`)}
    </tr>`)}</tbody>
  </table>`;
}

/** Used against a limit, as a labelled progress bar. */
export function Bar({ used, limit, label, fmt = int }) {
  if (!limit) return html`<span class="note">${fmt(used)}</span>`;
  const pct = Math.min(100, Math.round((used / limit) * 100));
  return html`<span><progress value=${Math.min(used, limit)} max=${limit} aria-label=${`${label}: ${pct}%`}></progress> <span class="note">${fmt(used)} / ${fmt(limit)}</span></span>`;
}

/** A uPlot chart. x: numbers (unix seconds for time), series: [{label, values, stroke}]. bars: draw bars. */
export function Chart({ title, x, series, bars = false, time = true, height = 220, xLabels }) {
  const el = useRef(null);
  useEffect(() => {
    if (!el.current) return;
    const width = Math.max(300, el.current.clientWidth - 16);
    const paths = bars ? uPlot.paths.bars({ size: [0.6, 60] }) : undefined;
    // counts start at 0; categories (xLabels) sit on whole positions with half a slot either side
    const y = { range: (u, min, max) => [0, Math.max(1, max * 1.1)] };
    const xs = xLabels ? { time: false, range: () => [-0.5, x.length - 0.5] } : { time };
    const opts = {
      title, width, height,
      scales: { x: xs, y },
      axes: [xLabels ? { splits: () => x, values: (u, vals) => vals.map((v) => String(xLabels[v] ?? "").slice(0, 18)) } : {}, {}],
      series: [{}, ...series.map((s) => ({ label: s.label, stroke: s.stroke ?? "#2457c5", fill: bars ? (s.fill ?? "rgba(36,87,197,.35)") : undefined, width: 2, paths, points: { show: !bars } }))],
    };
    const plot = new uPlot(opts, [x, ...series.map((s) => s.values)], el.current);
    return () => plot.destroy();
  }, [title, JSON.stringify(x), JSON.stringify(series.map((s) => s.values))]);
  return html`<figure class="chart" ref=${el} aria-label=${title}></figure>`;
}

/** Bars for top-N lists: a category chart with labelled x positions. */
export function TopChart({ title, rows, label, value }) {
  if (!rows.length) return html`<div class="chart"><p class="note">${title}: no requests yet</p></div>`;
  const x = rows.map((_, i) => i);
  return html`<${Chart} title=${title} x=${x} time=${false} bars=${true} xLabels=${rows.map(label)} series=${[{ label: "requests", values: rows.map(value) }]} />`;
}
