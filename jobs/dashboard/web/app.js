// The dashboard's entry point: the router (the address bar's path picks the page), the top bar, and
// api(), the one way the pages call the daemon's JSON API (with the session's CSRF token).
import { onConnection } from './live.js';
import * as jobsPage from './jobs.js';
import * as jobPage from './job.js';
import * as submitPage from './submit.js';
import * as hostPage from './host.js';
import * as referencePage from './reference.js';

const csrf = document.querySelector('meta[name="csrf-token"]').content;
const main = document.getElementById('main');
let unmount = null;

// A JSON API call. Resolves to {status, body}; a body that is not JSON comes back as {error: text}.
export async function api(method, url, body, headers = {}) {
  const init = { method, credentials: 'same-origin', headers: { ...headers } };
  if (method !== 'GET') init.headers['X-CSRF-Token'] = csrf;
  if (body !== undefined) init.body = body;
  const r = await fetch(url, init);
  const text = await r.text();
  let parsed;
  try { parsed = JSON.parse(text); } catch (e) { parsed = { error: text }; }
  return { status: r.status, body: parsed };
}

export function navigate(path, replace = false) {
  if (replace) history.replaceState(null, '', path);
  else history.pushState(null, '', path);
  route();
}

function route() {
  if (unmount) unmount();
  unmount = null;
  main.replaceChildren();
  const path = location.pathname.replace(/\/+$/, '') || '/';
  const params = new URLSearchParams(location.search);
  let page = 'jobs';
  const job = path.match(/^\/jobs\/(\d+)$/);
  if (job) {
    page = 'job';
    unmount = jobPage.mount(main, Number(job[1]));
  } else if (path === '/submit') {
    page = 'submit';
    unmount = submitPage.mount(main);
  } else if (path === '/host') {
    page = 'host';
    unmount = hostPage.mount(main);
  } else if (path === '/reference') {
    page = 'reference';
    unmount = referencePage.mount(main);
  } else {
    unmount = jobsPage.mount(main, params.get('state') || '');
  }
  for (const a of document.querySelectorAll('[data-nav]')) {
    if (a.dataset.nav === page || (page === 'job' && a.dataset.nav === 'jobs')) a.setAttribute('aria-current', 'page');
    else a.removeAttribute('aria-current');
  }
}

// Links inside the app change the page without reloading it (and without closing the live stream
// for nothing); modified clicks (new tab) and other origins stay the browser's.
document.addEventListener('click', (ev) => {
  const a = ev.target.closest('a[href]');
  if (!a || ev.defaultPrevented || ev.button !== 0 || ev.metaKey || ev.ctrlKey || ev.shiftKey || ev.altKey) return;
  const url = new URL(a.href, location.href);
  if (url.origin !== location.origin || a.target || a.hasAttribute('download')) return;
  if (url.pathname === location.pathname && url.search === location.search && url.hash) return;  // an anchor
  if (!/^\/($|jobs|submit|host|reference)/.test(url.pathname)) return;
  ev.preventDefault();
  navigate(url.pathname + url.search);
  main.focus({ preventScroll: true });
});
window.addEventListener('popstate', route);

const live = document.getElementById('live');
const labels = { idle: '', connecting: 'connecting…', live: 'live', reconnecting: 'reconnecting…', ended: 'disconnected' };
onConnection((s) => {
  live.textContent = labels[s] ?? s;
  live.className = `live live-${s}`;
  live.hidden = s === 'idle';
});

document.getElementById('logout').addEventListener('click', async () => {
  await fetch('/logout', { method: 'POST', credentials: 'same-origin', headers: { 'X-CSRF-Token': csrf } });
  location.assign('/login');
});

route();
