// The host: CPU slots and GPUs (and which job holds each), the queue in the order it is served, and
// the jobs by state. Live.
import { openLive } from './live.js';
import { STATES, age, clear, el, stateBadge } from './format.js';

export function mount(main) {
  const slots = el('div', { class: 'meter-box' });
  const gpus = el('ul', { class: 'gpu-tiles', 'aria-label': 'GPUs' });
  const queue = el('div');
  const byState = el('ul', { class: 'state-counts' });
  main.append(
    el('div', { class: 'page-head' }, el('h1', {}, 'Host')),
    el('div', { class: 'host-grid' },
      el('section', { class: 'card', 'aria-labelledby': 'slots-h' }, el('h2', { id: 'slots-h' }, 'CPU slots'), slots),
      el('section', { class: 'card', 'aria-labelledby': 'gpus-h' }, el('h2', { id: 'gpus-h' }, 'GPUs'), gpus),
      el('section', { class: 'card', 'aria-labelledby': 'states-h' }, el('h2', { id: 'states-h' }, 'Jobs by state'), byState)),
    el('section', { class: 'card', 'aria-labelledby': 'queue-h' }, el('h2', { id: 'queue-h' }, 'Queue'), queue));

  function draw(h) {
    const pct = h.slots_total ? Math.round((100 * h.slots_in_use) / h.slots_total) : 0;
    clear(slots,
      el('p', { class: 'big' }, el('strong', {}, String(h.slots_in_use)), ` of ${h.slots_total} in use`),
      el('meter', { min: '0', max: String(h.slots_total), value: String(h.slots_in_use), 'aria-label': `CPU slots in use: ${pct} %` }),
      el('p', { class: 'muted small' }, 'One slot per rank (resources.nproc_per_node); a job starts when all of its slots and GPUs are free.'));
    clear(gpus, (h.gpus || []).length
      ? h.gpus.map((g) => el('li', { class: g.job === null ? 'free' : 'held' },
        el('span', { class: 'gpu-index' }, `GPU ${g.index}`),
        g.job === null ? el('span', { class: 'muted' }, 'free') : el('a', { href: `/jobs/${g.job}` }, `job #${g.job}`)))
      : el('li', { class: 'none muted' }, 'No GPUs: NVML found none (or the daemon runs with --gpus 0).'));
    clear(byState, STATES.filter((s) => (h.jobs_by_state || {})[s]).map((s) =>
      el('li', {}, el('a', { href: `/jobs?state=${s}` }, stateBadge(s)), el('span', { class: 'count' }, String(h.jobs_by_state[s])))));
    if (!byState.children.length) byState.append(el('li', { class: 'muted' }, 'No jobs yet.'));
    const q = h.queue || [];
    clear(queue, q.length
      ? el('table', { class: 'compact queue' },
        el('caption', { class: 'sr-only' }, 'The queue, in the order jobs start'),
        el('thead', {}, el('tr', {}, ['#', 'Job', 'Priority', 'Needs', 'Waiting for', 'Why'].map((c) => el('th', { scope: 'col' }, c)))),
        el('tbody', {}, q.map((j, i) => el('tr', {},
          el('td', {}, String(i + 1)),
          el('td', {}, el('a', { href: `/jobs/${j.id}` }, `#${j.id} ${j.name}`)),
          el('td', { class: 'num' }, String(j.priority)),
          el('td', {}, `${j.slots} slot${j.slots === 1 ? '' : 's'}${j.gpus ? `, ${j.gpus} GPU${j.gpus === 1 ? '' : 's'}` : ''}`),
          el('td', {}, age(j.submitted_at)),
          el('td', { class: 'reason' }, j.reason)))))
      : el('p', { class: 'muted' }, 'The queue is empty: every submitted job is running or done.'));
  }

  return openLive({ view: 'host' }, { host: draw });
}
