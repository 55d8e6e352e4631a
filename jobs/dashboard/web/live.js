// The page's one live connection: an EventSource on /ui/events (Server-Sent Events). The daemon sends
// the view's current state first, then what changes; the browser reconnects by itself after a
// break (the daemon's `retry`), and every reconnect starts with `hello` and the whole state again.

import { setServerNow } from './format.js';

const listeners = new Set();
let state = 'idle';

// Connection state for the top bar: idle (no stream: the page has nothing live) | connecting | live |
// reconnecting | ended.
export function onConnection(fn) { listeners.add(fn); fn(state); return () => listeners.delete(fn); }
function setState(s) { state = s; for (const fn of listeners) fn(s); }

// handlers: {hello, jobs, host, job, timeline, log, metrics, problem}: each gets the parsed JSON.
export function openLive(params, handlers) {
  const url = '/ui/events?' + new URLSearchParams(params).toString();
  const source = new EventSource(url);
  setState('connecting');
  source.addEventListener('open', () => setState('live'));
  source.addEventListener('error', () => {
    // CLOSED: the daemon refused the stream (the session ended): the login page is where to go.
    if (source.readyState === EventSource.CLOSED) {
      setState('ended');
      fetch('/v1/host', { credentials: 'same-origin' }).then((r) => {
        if (r.status === 401) location.assign('/login?next=' + encodeURIComponent(location.pathname + location.search));
      }, () => {});
    } else {
      setState('reconnecting');
    }
  });
  // Every stream starts with hello: the daemon's clock (ages) and host name (the top bar).
  const pageHello = handlers.hello;
  handlers = { ...handlers, hello: (h) => {
    setServerNow(h.now);
    const name = document.getElementById('hostname');
    if (name) name.textContent = h.host || '';
    if (pageHello) pageHello(h);
  } };
  for (const [name, fn] of Object.entries(handlers)) {
    source.addEventListener(name, (ev) => {
      let data;
      try { data = JSON.parse(ev.data); } catch (e) { console.warn(`live stream: ${name} is not JSON`); return; }
      fn(data);
    });
  }
  return () => {
    source.close();
    setState('idle');
  };
}
