// The job list: newest first, filtered by state (the filter is in the address: /jobs?state=FAILED),
// live. A row per job: id, name, state, reason, ranks, GPUs, runs/restarts, age.
import { openLive } from './live.js';
import { navigate } from './app.js';
import { STATES, age, clear, el, gpuText, ranks, reasonOf, stateBadge } from './format.js';

const COLUMNS = ['ID', 'Name', 'State', 'Reason', 'Ranks', 'GPUs', 'Runs / restarts', 'Age'];

export function mount(main, asked) {
  // A state the address names in any case; one that is no state (a typo, an edited link) shows
  // every job and says so, rather than a stream the daemon refuses.
  const state = STATES.find((s) => s === String(asked).toUpperCase()) || '';
  const unknown = asked && !state ? el('p', { class: 'notice error', role: 'status' },
    `There is no job state '${asked}': showing every job.`) : null;
  const summary = el('p', { class: 'host-summary', 'aria-live': 'off' });
  // The daemon cannot write its state (a full disk): the jobs go on, but it must be said.
  const diskAlert = el('p', { class: 'notice error disk-alert', role: 'alert', hidden: true });
  const filters = el('div', { class: 'filters', role: 'group', 'aria-label': 'Filter jobs by state' });
  const body = el('tbody');
  const table = el('table', { class: 'jobs-table' },
    el('caption', { class: 'sr-only' }, 'Jobs, newest first'),
    el('thead', {}, el('tr', {}, COLUMNS.map((c) => el('th', { scope: 'col' }, c)))),
    body);
  const empty = el('p', { class: 'empty', hidden: true });
  const total = el('p', { class: 'muted small', 'aria-live': 'off' });
  main.append(
    el('div', { class: 'page-head' },
      el('h1', {}, 'Jobs'),
      el('a', { class: 'button primary', href: '/submit' }, 'Submit a job')),
    ...(unknown ? [unknown] : []), diskAlert, summary, filters,
    el('div', { class: 'card table-card' }, table, empty),
    total);

  let jobs = [];
  let counts = {};

  function drawFilters() {
    const shown = STATES.filter((s) => counts[s] || s === state);
    const all = Object.values(counts).reduce((a, b) => a + b, 0);
    clear(filters, [['', `All`, all], ...shown.map((s) => [s, s.charAt(0) + s.slice(1).toLowerCase(), counts[s] || 0])]
      .map(([value, label, n]) => el('button', {
        type: 'button', class: 'chip', 'aria-pressed': String(value === state),
        onclick: () => navigate(value ? `/jobs?state=${value}` : '/jobs', true),
      }, label, el('span', { class: 'count' }, String(n)))));
  }

  function row(j) {
    const link = el('a', { href: `/jobs/${j.id}` }, `#${j.id}`);
    const reason = reasonOf(j);
    return el('tr', { dataset: { id: j.id, state: j.state } },
      el('td', { 'data-label': 'ID', class: 'id' }, link),
      el('td', { 'data-label': 'Name', class: 'name' }, el('a', { href: `/jobs/${j.id}`, tabindex: '-1' }, j.name)),
      el('td', { 'data-label': 'State' }, stateBadge(j.state)),
      el('td', { 'data-label': 'Reason', class: 'reason', title: reason }, reason),
      el('td', { 'data-label': 'Ranks', class: 'num' }, String(ranks(j))),
      el('td', { 'data-label': 'GPUs', class: 'num' }, gpuText(j)),
      el('td', { 'data-label': 'Runs / restarts', class: 'num' }, `${j.runs} / ${j.restarts}`),
      el('td', { 'data-label': 'Age', class: 'num age', dataset: { since: j.submitted_at } }, age(j.submitted_at)));
  }

  function draw(list) {
    jobs = list.jobs || [];
    clear(body, jobs.map(row));
    table.hidden = jobs.length === 0;
    empty.hidden = jobs.length > 0;
    clear(empty, state
      ? `No ${state.toLowerCase()} jobs.`
      : ['No jobs yet. ', el('a', { href: '/submit' }, 'Submit one'), ' here, or run ', el('code', {}, 'ddp-launch submit job.yaml'), '.']);
    clear(total, list.total > jobs.length && !state ? `Showing the newest ${jobs.length} of ${list.total} jobs.` : '');
  }

  const close = openLive(state ? { view: 'jobs', state } : { view: 'jobs' }, {
    jobs: draw,
    host: (h) => {
      counts = h.jobs_by_state || {};
      drawFilters();
      const sd = h.state_dir || {};
      diskAlert.hidden = sd.writable !== false;
      clear(diskAlert, sd.writable === false
        ? `The daemon cannot write its state in ${sd.path}: ${sd.error}. Jobs go on; the state of ${sd.unsaved_jobs} ` +
          'job(s) is kept in memory and written once there is room. Free space there.'
        : '');
      const gpus = h.gpus || [];
      const used = gpus.filter((g) => g.job !== null).length;
      clear(summary,
        el('span', {}, el('strong', {}, `${h.slots_in_use}/${h.slots_total}`), ' CPU slots in use'),
        el('span', {}, el('strong', {}, `${used}/${gpus.length}`), ' GPUs in use'),
        el('span', {}, el('strong', {}, String((h.queue || []).length)), ' queued'));
    },
  });
  drawFilters();
  // Ages move on without the daemon saying anything: redrawn here, no request.
  const tick = setInterval(() => {
    for (const td of body.querySelectorAll('td.age')) td.textContent = age(Number(td.dataset.since));
  }, 5000);
  // A row is a link as a whole for the mouse (its id is the keyboard's link).
  body.addEventListener('click', (ev) => {
    const tr = ev.target.closest('tr[data-id]');
    if (tr && !ev.target.closest('a')) navigate(`/jobs/${tr.dataset.id}`);
  });
  return () => { close(); clearInterval(tick); };
}
