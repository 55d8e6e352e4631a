// Small helpers shared by the pages: DOM building (text only, never HTML from data), state badges,
// times and durations.

// el('a', {href: '/x', class: 'y'}, 'text', child…): attributes set one by one, children appended as
// text nodes or elements. `on*` attributes take functions (listeners), never strings.
export function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith('on') && typeof v === 'function') node.addEventListener(k.slice(2), v);
    else if (k === 'dataset') Object.assign(node.dataset, v);
    else node.setAttribute(k, v === true ? '' : String(v));
  }
  append(node, children);
  return node;
}

function append(node, children) {
  for (const c of children.flat()) {
    if (c === undefined || c === null || c === false) continue;
    node.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
}

export function clear(node, ...children) {
  node.replaceChildren();
  append(node, children);
  return node;
}

export const STATES = ['PENDING', 'STARTING', 'RUNNING', 'RESTARTING', 'CANCELLING', 'SUCCEEDED', 'FAILED', 'CANCELLED'];
export const TERMINAL = new Set(['SUCCEEDED', 'FAILED', 'CANCELLED']);

export function stateBadge(state) {
  return el('span', { class: `badge state-${String(state).toLowerCase()}` }, el('span', { class: 'dot', 'aria-hidden': 'true' }), state);
}

// The server's clock minus the browser's (seconds), from the live stream's hello: ages are the
// daemon's, whatever the browser's clock says.
let clockOffset = 0;
export function setServerNow(serverNow) { clockOffset = serverNow - Date.now() / 1000; }
export function serverNow() { return Date.now() / 1000 + clockOffset; }

export function duration(seconds) {
  if (!(seconds >= 0)) return '—';
  if (seconds < 1) return `${Math.round(seconds * 1000)} ms`;
  if (seconds < 60) return `${Math.floor(seconds)} s`;
  const m = Math.floor(seconds / 60);
  if (m < 60) return `${m} min ${Math.floor(seconds % 60)} s`;
  const h = Math.floor(m / 60);
  if (h < 48) return `${h} h ${m % 60} min`;
  return `${Math.floor(h / 24)} d ${h % 24} h`;
}

export function age(epochSeconds) {
  if (!epochSeconds) return '—';
  const s = Math.max(0, serverNow() - epochSeconds);
  if (s < 60) return `${Math.floor(s)} s`;
  if (s < 3600) return `${Math.floor(s / 60)} min`;
  if (s < 172800) return `${Math.floor(s / 3600)} h`;
  return `${Math.floor(s / 86400)} d`;
}

export function clock(epochSeconds) {
  if (!epochSeconds) return '—';
  const d = new Date(epochSeconds * 1000);
  const today = new Date();
  const time = d.toLocaleTimeString([], { hour: '2-digit', minute: '2-digit', second: '2-digit', hour12: false });
  if (d.toDateString() === today.toDateString()) return time;
  return `${d.toLocaleDateString([], { month: 'short', day: 'numeric' })} ${time}`;
}

// "0,1" for placed GPUs, "2 asked" before the job holds them, "—" for none.
export function gpuText(job) {
  if (job.gpus && job.gpus.length) return job.gpus.join(',');
  if (job.gpus_per_node > 0) return `${job.gpus_per_node} asked`;
  return '—';
}

export function ranks(job) { return (job.nodes || 1) * (job.nproc_per_node || 1); }

export function reasonOf(job) { return job.pending_reason || job.reason || ''; }

export function number(v, digits = 4) {
  if (typeof v !== 'number' || !isFinite(v)) return String(v);
  const a = Math.abs(v);
  if (a !== 0 && (a < 1e-3 || a >= 1e6)) return v.toExponential(2);
  return String(Number(v.toPrecision(digits)));
}
