'use strict';
// The web dashboard in a real browser (issue 14): Debian's chromium, headless, driven by
// playwright-core through the DevTools protocol, against a real `ddp-launch daemon --listen` with
// its own state directory and real 2-rank torch (gloo) jobs under real supervisors. GPUs are the one
// stand-in: a fake libnvidia-ml (tests/integration/launcher/fake_nvml.c) gives the daemon two
// devices and the supervisor's GPU watch its samples.
//
// Checks: the login page without the token, never data; the token URL logs in (HttpOnly,
// SameSite=Strict cookie) and leaves the address bar; a running 2-rank job appears in the list and
// turns SUCCEEDED without a reload; its log tail grows while it runs; its chart has its loss values
// (the same as GET /v1/jobs/{id}/metrics); GPU samples are charted; cancel from the page stops the
// job and every rank process (real pids); a malformed job file shows the daemon's line:column;
// CSRF refusal; 1280x800 and phone width without horizontal scrolling; keyboard reachable; no
// console error anywhere. Screenshots: <build>/test-artifacts/dashboard/*.png.
const assert = require('node:assert/strict');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const {
  PYTHON, ARTIFACTS, ENV, step, waitFor, alive, request, consoleErrors, watchConsole, withDaemonAndBrowser,
} = require('./browser_harness.js');

const WORKER = path.join(__dirname, 'loss_worker.py');
const TORCH_TIMEOUT = 150000;  // torch imports take 10-30 s per rank on a loaded 2-core machine

// A 2-rank job of loss_worker.py (or `worker`) that runs until `gate` exists. With metrics, its loss
// and the step of each (the worker's `step N` lines: the chart's x axis).
function jobYaml(name, gate, { gpus = 0, metrics = false, worker = WORKER } = {}) {
  return `name: ${name}\ncommand: [${PYTHON}, ${worker}, ${gate}]\n` +
    `resources: {nproc_per_node: 2, gpus_per_node: ${gpus}}\n` +
    `distributed: {backend: gloo, shutdown_grace: 3s}\n` +
    (metrics ? `metrics: {step: '^step ([0-9]+)', loss: 'loss=([0-9.eE+-]+)'}\n` : '');
}

async function shot(page, name) {
  const file = path.join(ARTIFACTS, `${name}.png`);
  await page.screenshot({ path: file });
  step(`screenshot ${file} (${fs.statSync(file).size} bytes)`);
  return file;
}

async function noHorizontalScroll(page, what) {
  const [scroll, width] = await page.evaluate(() => [document.documentElement.scrollWidth, window.innerWidth]);
  assert.ok(scroll <= width + 1, `${what}: the page is ${scroll} px wide in a ${width} px window`);
}

// Tabs from the top of the page until `selector` has the focus (the keyboard alone gets there).
async function tabTo(page, selector, maxTabs = 60) {
  await page.evaluate(() => { document.activeElement && document.activeElement.blur(); window.scrollTo(0, 0); });
  for (let i = 0; i < maxTabs; i++) {
    await page.keyboard.press('Tab');
    if (await page.evaluate((s) => document.activeElement && document.activeElement.matches(s), selector)) return i + 1;
  }
  throw new Error(`${selector} not reached with ${maxTabs} Tab presses`);
}

async function main() {
  fs.mkdirSync(ARTIFACTS, { recursive: true });
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ddp-dashboard-test-'));
  const gpus = path.join(dir, 'gpus');
  // The fake NVML reads this file at every call: replaced whole (rename), never seen half written.
  const writeGpus = (t) => {
    fs.writeFileSync(`${gpus}.new`, `${Math.round(62 + 25 * Math.sin(t))} ${Math.round(9000 + 900 * Math.sin(t / 2))} 16384\n` +
      `${Math.round(55 + 25 * Math.cos(t))} ${Math.round(8600 + 900 * Math.cos(t / 2))} 16384\n`);
    fs.renameSync(`${gpus}.new`, gpus);
  };
  writeGpus(0);
  let t = 0;
  const gpuTicker = setInterval(() => writeGpus((t += 0.7)), 1000);
  const env = { DDP_NVML_LIBRARY: ENV('DDP_FAKE_NVML', ''), FAKE_NVML_FILE: gpus };
  // The job of the README's screenshot names no path of this machine: the daemon (and so the job,
  // which has no workdir:) starts in a project directory holding the worker as train.py, and the
  // job file says `train.py` and a relative gate.
  const project = path.join(dir, 'project');
  fs.mkdirSync(project);
  fs.copyFileSync(WORKER, path.join(project, 'train.py'));
  try {
    await withDaemonAndBrowser(dir, env, { cwd: project }, async ({ daemon, browser }) => {
      const context = await browser.newContext({ viewport: { width: 1280, height: 800 }, colorScheme: 'light' });
      const page = await context.newPage();
      watchConsole(page, 'desktop');

      step('without the token: the login page, never data');
      let r = await page.goto(`${daemon.base}/jobs`);
      assert.equal(r.status(), 200);
      await page.waitForSelector('form[action="/login"] input#token');
      assert.equal(await page.$('meta[name="csrf-token"]'), null, 'the login page carries no session');
      assert.equal(await page.$('table'), null, 'the login page shows no jobs');
      assert.match(r.headers()['content-security-policy'], /default-src 'none'/);
      await shot(page, 'login');
      for (const target of ['/v1/jobs', '/ui/events?view=jobs', '/v1/host']) {
        const no = await request(daemon.port, 'GET', target);
        assert.equal(no.status, 401, `${target} without credentials: ${no.status}`);
      }
      const wrong = await request(daemon.port, 'GET', '/?token=0123456789abcdef');
      assert.equal(wrong.status, 401);
      assert.match(wrong.body, /not this daemon&#39;s token/);

      step('the token URL logs in and leaves the address bar');
      r = await page.goto(`${daemon.base}/?token=${daemon.token}`);
      assert.equal(page.url(), `${daemon.base}/`, 'the token left the URL');
      await page.waitForSelector('h1:text("Jobs")');
      const cookies = await context.cookies();
      const session = cookies.find((c) => c.name === `ddp_session_${daemon.port}`);
      assert.ok(session, `session cookie: ${JSON.stringify(cookies)}`);
      assert.equal(session.httpOnly, true);
      assert.equal(session.sameSite, 'Strict');
      assert.equal(await page.evaluate(() => document.cookie), '', 'scripts cannot read the session cookie');
      await page.waitForSelector('#live.live-live');

      step('a 2-rank job appears in the open list, live');
      await page.evaluate(() => { window.__sameDocument = true; });
      const trainYaml = jobYaml('train-demo', 'gate-train', { gpus: 2, metrics: true, worker: 'train.py' });
      assert.ok(!trainYaml.includes(dir) && !trainYaml.includes(__dirname), `a path of this machine: ${trainYaml}`);
      const trainId = await daemon.submit(trainYaml);
      const sleepId = await daemon.submit(jobYaml('to-cancel', path.join(dir, 'gate-never')));
      await page.waitForSelector(`tr[data-id="${trainId}"]`, { timeout: 10000 });
      await page.waitForSelector(`tr[data-id="${sleepId}"]`, { timeout: 10000 });
      await page.waitForSelector(`tr[data-id="${trainId}"][data-state="RUNNING"]`, { timeout: TORCH_TIMEOUT });
      assert.equal(await page.evaluate(() => window.__sameDocument), true, 'the list updated without a reload');
      const rowText = await page.textContent(`tr[data-id="${trainId}"]`);
      assert.match(rowText, /train-demo/);
      assert.match(rowText, /RUNNING/);
      await shot(page, 'jobs-1280x800');

      step('the keyboard reaches the job and opens it');
      const tabs = await tabTo(page, `tr[data-id="${trainId}"] td.id a`);
      step(`job link focused after ${tabs} Tab presses`);
      await page.keyboard.press('Enter');
      await page.waitForURL(`${daemon.base}/jobs/${trainId}`);
      await page.waitForSelector('#log');

      step('its log tail grows while it runs');
      const steps = async () => (await page.textContent('#log')).match(/^step \d+/gm) || [];
      const first = (await waitFor('step lines in the log tail', TORCH_TIMEOUT, async () => {
        const s = await steps();
        return s.length >= 2 && s;
      })).length;
      await waitFor('new log lines without a reload', 20000, async () => (await steps()).length > first + 3);
      assert.equal(await page.evaluate(() => window.__sameDocument), true);

      step('the chart shows the job\'s loss values');
      await page.waitForSelector('#metric-chart canvas', { timeout: 20000 });
      await waitFor('10 loss points of rank 0 in the chart', 30000,
        async () => Number(await page.getAttribute('#metric-summary .series[data-rank="0"]', 'data-points').catch(() => 0)) >= 10);
      const apiMetrics = (await daemon.api('GET', `/v1/jobs/${trainId}/metrics`)).body;
      const shown = await page.evaluate(() => Array.from(document.querySelectorAll('#metric-summary .series'),
        (s) => ({ rank: s.dataset.rank, points: Number(s.dataset.points), last: Number(s.dataset.last) })));
      assert.deepEqual(shown.map((s) => s.rank), ['0', '1'], 'a series per rank');
      for (const s of shown) {
        const values = apiMetrics.ranks[s.rank].loss;
        assert.ok(values.length >= s.points, `rank ${s.rank}: the API has ${values.length} values, the chart ${s.points}`);
        assert.equal(values[s.points - 1], s.last, `rank ${s.rank}: the chart's last point is the job's value ${s.points}`);
      }
      assert.match(await page.textContent('#metric-summary'), /rank 0: \d+ loss values, last [0-9.]+ at step \d+/);

      step('the chart\'s x axis is the step, as `ddp-launch report` draws it');
      assert.equal(await page.getAttribute('#metric-chart', 'data-x'), 'step');
      assert.equal(await page.getAttribute('#metric-chart', 'aria-label'), 'loss by step, a line per rank');
      const metricNames = await page.$$eval('#metric option', (os) => os.map((o) => o.value));
      assert.deepEqual(metricNames, ['loss'], 'the step is the x axis, not a metric to pick');
      const lastX = await page.evaluate(() => Array.from(document.querySelectorAll('#metric-summary .series'),
        (s) => ({ rank: s.dataset.rank, points: Number(s.dataset.points), x: Number(s.dataset.lastX) })));
      const apiNow = (await daemon.api('GET', `/v1/jobs/${trainId}/metrics`)).body;
      for (const s of lastX) {
        const steps = apiNow.steps[s.rank].loss;
        assert.equal(steps[s.points - 1], s.x, `rank ${s.rank}: the last point's x is its step (${steps.slice(-3)})`);
        // The worker counts its steps from 0: value n (1, 2, …) is step n-1, so x is not the value's position.
        assert.equal(s.x, s.points - 1, `rank ${s.rank}: x ${s.x} for the job's value ${s.points}`);
      }

      step('GPU samples are charted (fake NVML)');
      await page.waitForSelector('.gpu-card:not([hidden]) canvas', { timeout: 40000 });
      await waitFor('two GPU samples', 30000, async () => (await page.evaluate(() =>
        document.querySelectorAll('.gpu-card tbody tr').length)) === 2);
      await waitFor('40 loss points for the screenshot', 30000,
        async () => Number(await page.getAttribute('#metric-summary .series[data-rank="0"]', 'data-points')) >= 40);
      await page.evaluate(() => window.scrollTo(0, 0));
      const jobShot = await shot(page, 'job-running-1280x800');
      if (process.env.DDP_UPDATE_README_SCREENSHOT) {
        fs.copyFileSync(jobShot, path.join(ENV('DDP_SOURCE_DIR', '.'), 'docs/images/dashboard-job.png'));
        step('docs/images/dashboard-job.png updated');
      }
      await noHorizontalScroll(page, 'job page at 1280x800');

      step('phone width: readable, no sideways scrolling');
      const phone = await context.newPage();
      watchConsole(phone, 'phone');
      await phone.setViewportSize({ width: 390, height: 844 });
      await phone.goto(`${daemon.base}/jobs`);
      await phone.waitForSelector(`tr[data-id="${trainId}"]`);
      await noHorizontalScroll(phone, 'job list at 390 px');
      await shot(phone, 'jobs-phone');
      await phone.goto(`${daemon.base}/jobs/${trainId}`);
      await phone.waitForSelector('#metric-chart canvas');
      await noHorizontalScroll(phone, 'job page at 390 px');
      const fontSize = await phone.evaluate(() => parseFloat(getComputedStyle(document.querySelector('#log')).fontSize));
      assert.ok(fontSize >= 12, `log text is ${fontSize} px`);
      await shot(phone, 'job-phone');
      await phone.close();

      step('the job turns SUCCEEDED on the open page');
      fs.writeFileSync(path.join(project, 'gate-train'), '');
      await page.waitForSelector('.head-badge .state-succeeded', { timeout: 60000 });
      assert.equal(await page.evaluate(() => window.__sameDocument), true, 'no reload');
      assert.equal(await page.isHidden('.page-head button.danger'), true, 'no cancel for a finished job');
      await waitFor('the timeline names the end', 10000, async () => /finished: SUCCEEDED/i.test(await page.textContent('#timeline')));
      await page.click('nav a[href="/jobs"]');
      await page.waitForSelector(`tr[data-id="${trainId}"][data-state="SUCCEEDED"]`);
      assert.equal(await page.evaluate(() => window.__sameDocument), true, 'the list came without a reload');

      step('cancel from the page stops the job and every rank');
      await page.click(`tr[data-id="${sleepId}"] td.id a`);
      await page.waitForSelector('.head-badge .state-running', { timeout: TORCH_TIMEOUT });
      const pids = await waitFor('both ranks started', TORCH_TIMEOUT, async () => {
        const ev = (await daemon.api('GET', `/v1/jobs/${sleepId}/events`)).body.events;
        const ranks = ev.filter((e) => e.event === 'rank_started').map((e) => e.pid);
        return ranks.length === 2 && ranks;
      });
      const supervisor = (await daemon.job(sleepId)).pid;
      assert.ok(supervisor > 0 && pids.every(alive) && alive(supervisor), `live processes: ${pids} ${supervisor}`);
      const csrfFree = await request(daemon.port, 'POST', `/v1/jobs/${sleepId}/cancel`,
        { headers: { Cookie: `${session.name}=${session.value}` } });
      assert.equal(csrfFree.status, 403, `a cancel with the cookie but no CSRF token: ${JSON.stringify(csrfFree.body)}`);
      await tabTo(page, '.page-head button.danger');
      await page.keyboard.press('Enter');
      await page.waitForSelector('dialog.confirm[open]');
      await shot(page, 'cancel-dialog');
      await page.click('dialog.confirm button.danger');
      await page.waitForSelector('.head-badge .state-cancelled', { timeout: 60000 });
      await waitFor('no rank or supervisor process left', 15000, () => !pids.some(alive) && !alive(supervisor));
      assert.match(await page.textContent('.reason'), /cancelled by request/);

      step('a malformed job file shows the daemon\'s line:column');
      const bad = 'name: broken\ncommand: [/bin/true]\nresources: {nproc_per_node: 1, gpus: 1}\nlimits: {timeout: 5 parsecs}\n';
      const expected = (await daemon.api('POST', '/v1/jobs', bad, { 'X-Ddp-File': 'job.yaml' })).body;
      assert.ok(expected.problems.length >= 2, JSON.stringify(expected));
      await page.click('nav a[href="/submit"]');

      step('the submit page links the job file reference the daemon serves (the browser has no jobs/README.md)');
      const help = await page.textContent('#yaml-help');
      assert.ok(!/README/.test(help), `the help names a file a browser user does not have: ${help}`);
      const [refPage] = await Promise.all([context.waitForEvent('page'), page.click('#reference-link')]);
      watchConsole(refPage, 'reference');
      await refPage.waitForSelector('#reference h2#resources', { timeout: 10000 });
      assert.equal(new URL(refPage.url()).pathname, '/reference');
      const keys = await refPage.$$eval('#reference h2', (hs) => hs.map((h) => h.textContent));
      for (const key of ['name, command, args', 'workdir, env', 'resources', 'distributed', 'limits', 'metrics']) {
        assert.ok(keys.some((k) => k.startsWith(key)), `the reference has no section '${key}': ${keys}`);
      }
      const refText = await refPage.textContent('#reference');
      for (const key of ['nproc_per_node', 'gpus_per_node', 'max_restarts', 'shutdown_grace', 'timeout']) {
        assert.ok(refText.includes(key), `the reference does not describe ${key}`);
      }
      await refPage.click('#reference nav a[href="#metrics"]');
      assert.equal(new URL(refPage.url()).hash, '#metrics', 'a key in the list jumps to its section');
      await refPage.waitForSelector('#reference h2#resources');
      await noHorizontalScroll(refPage, 'the job file reference');
      await shot(refPage, 'job-file-reference');
      await refPage.close();

      await page.fill('#yaml', bad);
      await page.click('button[type="submit"]');
      await page.waitForSelector('#problems:not([hidden]) li');
      const positions = await page.$$eval('#problems li button.pos', (bs) => bs.map((b) => b.textContent));
      assert.deepEqual(positions, expected.problems.map((p) => `job.yaml:${p.line}:${p.column}`));
      const problemText = await page.textContent('#problems');
      for (const p of expected.problems) assert.ok(problemText.includes(p.message), `shown: ${p.message}`);
      await page.click('#problems li button.pos >> nth=0');
      const caret = await page.evaluate(() => document.getElementById('yaml').selectionStart);
      const { line, column } = expected.problems[0];
      assert.equal(caret, bad.split('\n').slice(0, line - 1).join('\n').length + (line > 1 ? 1 : 0) + column - 1, 'caret at the problem');
      await shot(page, 'submit-errors');
      // A loaded file: its text in the editor, its name in the problems' positions.
      const upload = path.join(dir, 'my-job.yaml');
      fs.writeFileSync(upload, 'name: uploaded\ncommand: [/bin/true]\nretries: 3\n');
      await page.setInputFiles('#yaml-file', upload);
      await page.waitForFunction(() => document.getElementById('yaml').value.startsWith('name: uploaded'));
      await page.click('button[type="submit"]');
      await page.waitForSelector('#problems li button.pos:text-matches("^my-job\\.yaml:3:1$")');
      assert.equal((await daemon.api('GET', '/v1/jobs')).body.total, 2, 'nothing was submitted');

      step('a valid job file submitted from the page opens its job page');
      await page.fill('#yaml', `name: from-the-page\ncommand: [${PYTHON}, -c, "print('hello from the page')"]\n`);
      await page.click('button[type="submit"]');
      await page.waitForURL(/\/jobs\/3$/);
      await page.waitForSelector('.head-badge .state-succeeded', { timeout: 60000 });
      await waitFor('the job\'s output in its log', 10000, async () => /hello from the page/.test(await page.textContent('#log')));

      step('the host page');
      await page.click('nav a[href="/host"]');
      await page.waitForSelector('.gpu-tiles li');
      assert.equal(await page.locator('.gpu-tiles li').count(), 2);
      await shot(page, 'host');

      assert.deepEqual(consoleErrors, [], 'console errors');
    });
  } finally {
    clearInterval(gpuTicker);
  }
}

main().catch((e) => {
  console.error(e);
  process.exitCode = 1;
});
