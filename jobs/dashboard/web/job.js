// A job's page: state and reason, facts, its metric chart, its GPUs, one rank's live log (following
// restarts), the timeline of transitions and supervisor events, its job file, and cancel.
import { openLive } from './live.js';
import { api } from './app.js';
import { LineChart, colour } from './charts.js';
import { eventItem, transitionItem } from './timeline.js';
import { TERMINAL, age, clear, clock, duration, el, gpuText, number, ranks, reasonOf, serverNow, stateBadge } from './format.js';

const LOG_KEEP = 256 * 1024;  // characters of log the page keeps (the daemon has the rest)
const TIMELINE_KEEP = 2000;   // timeline items the page keeps

export function mount(main, id) {
  let job = null;
  let rank = '0';
  let stream = 'stdout';
  let metricName = '';
  let metrics = { names: [], ranks: {} };
  let gpu = {};  // rank → {t: [], util: [], mem: [], device, total}
  let close = () => {};

  const title = el('h1', {}, `Job #${id}`);
  const badge = el('span', { class: 'head-badge' });
  const cancelBtn = el('button', { type: 'button', class: 'danger', hidden: true, onclick: () => dialog.showModal() }, 'Cancel job');
  const reason = el('p', { class: 'reason' });
  const alerts = el('div', { class: 'alerts' });
  const facts = el('dl', { class: 'facts' });
  const notice = el('p', { class: 'notice', role: 'status', 'aria-live': 'polite' });

  const metricSelect = el('select', { id: 'metric', onchange: () => { metricName = metricSelect.value; drawMetrics(); } });
  const chartBox = el('div', { class: 'chart', id: 'metric-chart' });
  const chartSummary = el('p', { class: 'chart-summary', id: 'metric-summary' });
  const metricsCard = el('section', { class: 'card chart-card', 'aria-labelledby': 'metrics-h', hidden: true },
    el('div', { class: 'card-head' }, el('h2', { id: 'metrics-h' }, 'Metrics'),
      el('label', { class: 'inline' }, 'Metric ', metricSelect)),
    chartBox, chartSummary);
  // x: the step of each value, as `ddp-launch report` charts (the daemon falls back to the value's
  // position when a series has no steps that only go up: live_frames.hpp).
  const chart = new LineChart(chartBox, { xLabel: 'step', yLabel: '' });

  const utilBox = el('div', { class: 'chart' });
  const memBox = el('div', { class: 'chart' });
  const gpuTable = el('tbody');
  const gpuCard = el('section', { class: 'card gpu-card', 'aria-labelledby': 'gpu-h', hidden: true },
    el('div', { class: 'card-head' }, el('h2', { id: 'gpu-h' }, 'GPUs')),
    el('div', { class: 'gpu-charts' },
      el('figure', {}, el('figcaption', {}, 'Utilisation, %'), utilBox),
      el('figure', {}, el('figcaption', {}, 'Memory used, MiB'), memBox)),
    el('table', { class: 'compact' }, el('caption', { class: 'sr-only' }, 'Latest GPU sample per rank'),
      el('thead', {}, el('tr', {}, ['Rank', 'Device', 'Utilisation', 'Memory'].map((h) => el('th', { scope: 'col' }, h)))),
      gpuTable));
  const utilChart = new LineChart(utilBox, { xLabel: 'time', yLabel: '%', time: true, height: 180, yRange: [0, 100] });
  const memChart = new LineChart(memBox, { xLabel: 'time', yLabel: 'MiB', time: true, height: 180 });

  const rankSelect = el('select', { id: 'log-rank', onchange: () => { rank = rankSelect.value; connect(); } });
  const streamSelect = el('select', { id: 'log-stream', onchange: () => { stream = streamSelect.value; connect(); } },
    el('option', { value: 'stdout' }, 'stdout'), el('option', { value: 'stderr' }, 'stderr'));
  const follow = el('input', { type: 'checkbox', id: 'log-follow', checked: true });
  const log = el('pre', { class: 'log', id: 'log', tabindex: '0', 'aria-label': 'Log', 'aria-live': 'off' });
  const logCard = el('section', { class: 'card log-card', 'aria-labelledby': 'log-h' },
    el('div', { class: 'card-head' }, el('h2', { id: 'log-h' }, 'Log'),
      el('div', { class: 'controls' },
        el('label', { class: 'inline' }, 'Rank ', rankSelect),
        el('label', { class: 'inline' }, 'Stream ', streamSelect),
        el('label', { class: 'inline check' }, follow, ' Follow'))),
    log);

  const timeline = el('ol', { class: 'timeline', id: 'timeline', tabindex: '0', 'aria-label': 'Timeline' });
  const spec = el('pre', { class: 'spec', tabindex: '0', 'aria-label': 'Job file' });
  const runDir = el('p', { class: 'muted small run-dir' });

  const yes = el('button', { type: 'button', class: 'danger', onclick: () => cancel() }, 'Cancel job');
  const no = el('button', { type: 'button', onclick: () => dialog.close() }, 'Keep it running');
  const dialog = el('dialog', { class: 'confirm', 'aria-labelledby': 'confirm-h' },
    el('h2', { id: 'confirm-h' }, `Cancel job #${id}?`),
    el('p', {}, 'Its ranks get SIGTERM, then SIGKILL once the job\'s shutdown grace has passed.'),
    el('div', { class: 'actions' }, no, yes));

  main.append(
    el('nav', { class: 'crumbs', 'aria-label': 'Breadcrumb' }, el('a', { href: '/jobs' }, 'Jobs'), ' / ', `#${id}`),
    el('div', { class: 'page-head' }, el('div', { class: 'title' }, title, badge), el('div', { class: 'actions' }, cancelBtn)),
    reason, notice, alerts, facts,
    el('div', { class: 'job-grid' },
      el('div', { class: 'col-main' }, metricsCard, gpuCard, logCard),
      el('div', { class: 'col-side' },
        el('section', { class: 'card', 'aria-labelledby': 'tl-h' }, el('h2', { id: 'tl-h' }, 'Timeline'), timeline),
        el('section', { class: 'card', 'aria-labelledby': 'spec-h' }, el('h2', { id: 'spec-h' }, 'Job file'), spec, runDir))),
    dialog);

  async function cancel() {
    yes.disabled = true;
    const r = await api('POST', `/v1/jobs/${id}/cancel`);
    yes.disabled = false;
    dialog.close();
    notice.textContent = r.status < 300 ? `Cancelling job #${id}…` : `Cancel refused: ${r.body.error || r.status}`;
    notice.className = r.status < 300 ? 'notice' : 'notice error';
  }

  function fact(term, value) { return el('div', {}, el('dt', {}, term), el('dd', {}, value)); }

  function drawJob(j) {
    const first = !job;
    job = j;
    drawFacts();
    clear(title, `#${j.id} `, el('span', { class: 'job-name' }, j.name));
    clear(badge, stateBadge(j.state));
    document.title = `#${j.id} ${j.name} · ddp-launch`;
    reason.textContent = reasonOf(j);
    cancelBtn.hidden = TERMINAL.has(j.state);
    if (TERMINAL.has(j.state) && dialog.open) dialog.close();
    clear(alerts,
      (j.stragglers || []).map((s) => el('p', { class: 'alert warn' },
        `Straggler: rank ${s.rank} at ${number(s.ratio, 2)}× the median step rate (${number(s.rank_step_s, 3)} s/step vs ${number(s.median_step_s, 3)} s/step).`)),
      (j.hangs || []).slice(-1).map((h) => el('p', { class: 'alert bad' }, `Hang (run ${h.run}, attempt ${h.attempt}): ${h.text}`)));
    spec.textContent = j.spec || '';
    markEmptyLog();
    clear(runDir, j.run_dir ? ['Run directory: ', el('code', {}, j.run_dir)] : '');
    if (first || rankSelect.options.length !== ranks(j) + 1) {
      clear(rankSelect, Array.from({ length: ranks(j) }, (_, r) => el('option', { value: String(r) }, `rank ${r}`)),
        el('option', { value: 'supervisor' }, 'supervisor'));
      rankSelect.value = rank;
    }
  }

  // The facts; the times in them move on by themselves (redrawn every second, no request).
  function drawFacts() {
    const j = job;
    if (!j) return;
    const ended = j.finished_at ? j.finished_at : 0;
    clear(facts,
      fact('Ranks', `${ranks(j)}${j.nodes > 1 ? ` (${j.nodes} nodes × ${j.nproc_per_node})` : ''}`),
      fact('GPUs', gpuText(j)),
      fact('Runs / restarts', `${j.runs} / ${j.restarts}`),
      j.restart_budget ? fact('Restart budget', `${j.restart_budget.used} of ${j.restart_budget.max_restarts} used, ${j.restart_budget.restarts_left} left (this run${j.restart_budget.counts === 'progress' ? ', only restarts without progress count' : ''}), ${j.restart_budget.no_progress_restarts} without progress in a row`) : null,
      fact('Priority', String(j.priority)),
      fact('Submitted', el('span', { title: `${age(j.submitted_at)} ago` }, clock(j.submitted_at))),
      fact(ended ? 'Ran for' : 'Running for', j.started_at ? duration((ended || serverNow()) - j.started_at) : '—'),
      fact('Exit code', j.exit_code === null || j.exit_code === undefined ? '—' : String(j.exit_code)),
      fact('Executor', j.slurm_job_id ? `slurm (job ${j.slurm_job_id})` : j.executor));
  }

  function addTimeline(t) {
    const items = [...(t.transitions || []).map((x) => [x.time, transitionItem(x)])];
    for (const e of t.events || []) {
      if (e.event === 'gpu_sample') addGpuSample(e);
      else items.push([e.time, eventItem(e)]);
    }
    items.sort((a, b) => a[0] - b[0]);
    const atEnd = timeline.scrollTop + timeline.clientHeight >= timeline.scrollHeight - 8;
    for (const [, li] of items) {
      // Rows arrive in order per kind; a transition and an event of the same moment keep time order.
      let before = null;
      for (let n = timeline.lastElementChild; n && Number(n.dataset.time) > Number(li.dataset.time); n = n.previousElementSibling) before = n;
      timeline.insertBefore(li, before);
    }
    while (timeline.children.length > TIMELINE_KEEP) timeline.firstElementChild.remove();
    if (atEnd) timeline.scrollTop = timeline.scrollHeight;
    if (items.length || (t.events || []).length) drawGpu();
  }

  function addGpuSample(e) {
    const g = gpu[e.rank] || (gpu[e.rank] = { t: [], util: [], mem: [] });
    g.t.push(e.time);
    g.util.push(e.util);
    g.mem.push(e.mem_used_mib);
    g.device = e.device;
    g.total = e.mem_total_mib;
    if (g.t.length > 4000) for (const k of ['t', 'util', 'mem']) g[k].splice(0, g[k].length - 4000);
  }

  function drawGpu() {
    const rs = Object.keys(gpu).sort((a, b) => a - b);
    gpuCard.hidden = rs.length === 0;
    if (!rs.length) return;
    utilChart.setData(rs.map((r) => ({ label: `rank ${r}`, x: gpu[r].t, y: gpu[r].util })));
    memChart.setData(rs.map((r) => ({ label: `rank ${r}`, x: gpu[r].t, y: gpu[r].mem })));
    clear(gpuTable, rs.map((r) => {
      const g = gpu[r];
      return el('tr', {}, el('td', {}, el('i', { class: 'swatch', dataset: { c: rs.indexOf(r) } }), ` rank ${r}`), el('td', {}, g.device), el('td', {}, `${g.util[g.util.length - 1]} %`),
        el('td', {}, `${number(g.mem[g.mem.length - 1], 5)} / ${number(g.total, 5)} MiB`));
    }));
    paintSwatches(gpuTable);
  }

  function drawMetrics() {
    const names = metrics.names || [];
    metricsCard.hidden = names.length === 0;
    if (!names.length) return;
    if (!names.includes(metricName)) metricName = names.includes('loss') ? 'loss' : names[0];
    if (metricSelect.options.length !== names.length) clear(metricSelect, names.map((n) => el('option', { value: n }, n)));
    metricSelect.value = metricName;
    const series = Object.keys(metrics.ranks || {}).sort((a, b) => a - b)
      .map((r) => ({ rank: r, s: metrics.ranks[r][metricName] }))
      .filter(({ s }) => s && s.x.length)
      .map(({ rank: r, s }) => ({ label: `rank ${r}`, x: s.x, y: s.y, count: s.count }));
    const byStep = metrics.x !== 'index';
    chart.setData(series, byStep ? 'step' : 'logged value #');
    chartBox.dataset.x = byStep ? 'step' : 'index';
    // The canvas has no words: the chart's own say what its axes are.
    chartBox.setAttribute('role', 'img');
    chartBox.setAttribute('aria-label', `${metricName} by ${byStep ? 'step' : 'logged value #'}, a line per rank`);
    // The chart's words, for screen readers and tests: points per rank, the latest value and its step.
    clear(chartSummary, series.length
      ? series.map((s, i) => {
        const lastX = s.x[s.x.length - 1];
        const last = s.y[s.y.length - 1];
        return el('span', { class: 'series', dataset: { rank: s.label.slice(5), points: s.count, last, lastX } },
          el('i', { class: 'swatch', dataset: { c: i } }),
          `${s.label}: ${s.count} ${metricName} values, last ${number(last)}${byStep ? ` at step ${lastX}` : ''}`);
      })
      : `No ${metricName} values yet.`);
    paintSwatches(chartSummary);
  }

  // A legend swatch in its series' colour (set through the CSSOM: the CSP allows no inline style).
  function paintSwatches(node) {
    for (const sw of node.querySelectorAll('.swatch')) sw.style.background = colour(Number(sw.dataset.c));
  }

  function addLog(chunk) {
    if (chunk.reset) log.textContent = '';
    if (chunk.text) {
      let text = log.textContent + chunk.text;
      if (text.length > LOG_KEEP) {
        // From a line's start when one is in the kept part; else (a line longer than LOG_KEEP) its end.
        const cut = text.indexOf('\n', text.length - LOG_KEEP);
        text = text.slice(cut >= 0 ? cut + 1 : text.length - LOG_KEEP);
      }
      log.textContent = text;
    }
    markEmptyLog();
    if (follow.checked) log.scrollTop = log.scrollHeight;
  }

  function markEmptyLog() {
    if (!log.textContent) {
      log.dataset.empty = job && TERMINAL.has(job.state)
        ? `This log is empty${stream === 'stdout' ? ': try stderr, or the supervisor' : ''}.`
        : 'Nothing yet: the rank has not written to this stream.';
    } else {
      delete log.dataset.empty;
    }
  }

  function connect() {
    close();
    log.setAttribute('aria-label', `Log of ${rank === 'supervisor' ? 'the supervisor' : `rank ${rank}`}, ${stream}`);
    close = openLive({ view: 'job', job: id, rank, stream }, {
      hello: () => { timeline.replaceChildren(); gpu = {}; },
      job: drawJob,
      timeline: addTimeline,
      log: addLog,
      metrics: (m) => { metrics = m; drawMetrics(); },
      problem: (p) => { notice.textContent = p.error; },
    });
  }
  // An unknown id gets a sentence, not a page that waits forever.
  api('GET', `/v1/jobs/${id}`).then((r) => {
    if (r.status === 200) connect();
    else clear(main, el('div', { class: 'page-head' }, el('h1', {}, `Job #${id}`)),
      el('p', { class: 'notice error', role: 'alert' }, r.body.error || `HTTP ${r.status}`),
      el('p', {}, el('a', { href: '/jobs' }, 'All jobs')));
  });
  const tick = setInterval(drawFacts, 1000);
  return () => { close(); clearInterval(tick); chart.destroy(); utilChart.destroy(); memChart.destroy(); };
}
