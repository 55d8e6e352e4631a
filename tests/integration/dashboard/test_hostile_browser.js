'use strict';
// The dashboard in a real browser against hostile text and pages (Debian's chromium, headless,
// playwright-core; a real daemon and real supervised ranks, no torch needed):
//
// - Markup that runs script if parsed (<img onerror>, <script>, <svg onload>, attribute breakouts)
//   in every piece of text the pages show: the job file (comment, args, env), a rank's stdout and
//   stderr, a metric line, the failure reason and the timeline's root cause (the rank's error
//   file), the daemon's host name (a UTS namespace where the test may make one), the submit page's
//   problems (keys, the file name), and URL parameters (next, token, login, state). The pages run in
//   a context with the Content-Security-Policy bypassed, so the test fails on any HTML sink even
//   though the CSP would block it: a global __xss() records every payload that runs.
// - A rank's output as a careless program writes it: a 1 MB line without a newline (the page
//   keeps at most its 256 KiB of log), colour codes, a progress bar's carriage returns, bytes that
//   are not UTF-8, a NUL.
// - A page on another port of the same host (same site: SameSite=Strict does not apply): its
//   form posts (text/plain submit, cancel, logout) and a no-cors fetch change nothing, and the
//   cookie it sets (ddp_session_<port>, Path=/jobs) does not log the dashboard out.
// - The login link `ddp-launch ui` prints: the daemon's token is nowhere in the browser profile
//   afterwards (history included), and the URL the history kept no longer logs in.
const assert = require('node:assert/strict');
const { execFileSync } = require('node:child_process');
const fs = require('node:fs');
const http = require('node:http');
const os = require('node:os');
const path = require('node:path');
const {
  DDP_LAUNCH, PYTHON, CHROMIUM, CHROMIUM_ARGS, playwright, step, waitFor, request, consoleErrors, watchConsole,
  withDaemonAndBrowser,
} = require('./browser_harness.js');

const WORKER = path.join(__dirname, 'hostile_worker.py');
const MARKUP = '<img src=x onerror="__xss(\'TAG\')"><script>__xss(\'TAG\')</script>"\'><svg onload="__xss(\'TAG\')"></svg>';
const markup = (tag) => MARKUP.replaceAll('TAG', tag);
const HOST_MARKUP = '<img src=x onerror=__xss(\'host\')>';  // a host name has at most 64 bytes
const LOG_KEEP = 256 * 1024;  // web/job.js

// Runs the daemon in a UTS namespace of its own whose host name is markup, where allowed (root).
const HOSTNAME_WRAP = [PYTHON, '-c', `
import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
name = sys.argv[1].encode()
if libc.unshare(0x04000000) != 0 or libc.sethostname(name, len(name)) != 0:
    print("cannot set a host name here (needs CAP_SYS_ADMIN)", file=sys.stderr)
os.execv(sys.argv[2], sys.argv[2:])
`, HOST_MARKUP];

// Nothing of the payloads ran, and no element of theirs exists.
async function clean(page, where) {
  const found = await page.evaluate(() => ({
    hits: window.__hits || [],
    elements: [...document.querySelectorAll('img[src="x"], svg[onload], [onerror], [onload], iframe, script:not([src]), body script')]
      .map((e) => e.outerHTML.slice(0, 100)),
  }));
  assert.deepEqual(found.hits, [], `${where}: injected script ran (${found.hits.join(', ')})`);
  assert.deepEqual(found.elements, [], `${where}: injected elements`);
}

const text = (page, selector) => page.evaluate((s) => document.querySelector(s).textContent, selector);

function uiLink(daemon) {
  return execFileSync(DDP_LAUNCH, ['ui', '--socket', daemon.socket], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] }).trim();
}

// Every file under dir that holds `needle` (the browser's profile: history, caches, sessions).
function filesHolding(dir, needle, top = dir) {
  const hits = [];
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    const file = path.join(dir, entry.name);
    if (entry.isDirectory()) hits.push(...filesHolding(file, needle, top));
    if (!entry.isFile()) continue;
    try {
      if (fs.readFileSync(file).includes(needle)) hits.push(path.relative(top, file));
    } catch (e) { /* gone meanwhile */ }
  }
  return hits;
}

async function xssEverywhere(browser, daemon, dir) {
  const context = await browser.newContext({ bypassCSP: true, viewport: { width: 1280, height: 900 } });
  await context.addInitScript(() => { window.__hits = []; window.__xss = (t) => window.__hits.push(t); });
  const page = await context.newPage();
  watchConsole(page, 'hostile');

  step('URL parameters on the login page');
  for (const target of [`/login?next=${encodeURIComponent(`/${markup('next')}`)}`, `/?token=${encodeURIComponent(markup('token'))}`,
    `/jobs?login=${encodeURIComponent(markup('login'))}`]) {
    await page.goto(daemon.base + target);
    await page.waitForSelector('form[action="/login"]');
    await clean(page, target);
  }
  await page.goto(uiLink(daemon));
  await page.waitForSelector('h1:text("Jobs")');

  step('a hostile rank: markup, a 1 MB line, colour codes, CRs, bad UTF-8 and NUL, a markup error file');
  const gate = path.join(dir, 'gate');
  const id = await daemon.submit(`# ${markup('comment')}\nname: hostile\ncommand: [${PYTHON}, ${WORKER}, ${gate}]\n` +
    `args: [${JSON.stringify(MARKUP)}]\nenv: {XSS: ${JSON.stringify(markup('env'))}}\n` +
    'metrics: {loss: \'loss=(\\S+)\'}\n');
  await page.goto(`${daemon.base}/jobs/${id}`);
  await waitFor('the rank\'s first line in the page\'s log', 60000, async () => (await text(page, '#log')).includes('ready'));
  fs.writeFileSync(gate, '');
  await waitFor('the end of 1 MB without a newline in the page\'s log', 60000, async () => (await text(page, '#log')).endsWith('MID-LINE'));
  const long = (await text(page, '#log')).length;
  assert.ok(long <= LOG_KEEP, `in the middle of a 1 MB line the page keeps ${long} characters of log (at most ${LOG_KEEP})`);
  fs.writeFileSync(`${gate}-2`, '');
  await waitFor('END-OF-LOG in the page\'s log', 60000, async () => (await text(page, '#log')).includes('END-OF-LOG'));
  const log = await text(page, '#log');
  assert.ok(log.length <= LOG_KEEP, `the page keeps ${log.length} characters of log (at most ${LOG_KEEP})`);
  assert.ok(log.includes(markup('log')), 'the markup line is shown as text');
  assert.ok(log.includes('\nRED coloured\n'), `colour codes and the window title are not shown: ${JSON.stringify(log.slice(-400))}`);
  assert.ok(log.includes('\n 10%|#  |\n 50%|## |\n100%|###|\n'), 'a progress bar\'s updates, a line each');
  assert.ok(!/[\x00-\x08\x0b-\x1f\x7f]/.test(log), 'no control character is left');
  assert.match(log, /not UTF-8: \ufffd+\(? and a NUL:\./, 'bad bytes are replaced, the NUL dropped');
  await page.waitForSelector('.head-badge .state-failed', { timeout: 60000 });
  await waitFor('the error file\'s reason', 10000, async () => (await text(page, 'p.reason')).includes(`ValueError: ${markup('reason')}`));
  await waitFor('the root cause in the timeline', 10000, async () => (await text(page, '#timeline')).includes(markup('reason')));
  const spec = await text(page, 'pre.spec');
  assert.ok(spec.includes(markup('comment')) && spec.includes(JSON.stringify(markup('env'))), 'the job file, as text');
  await waitFor('the metric chart', 10000, async () => (await page.$$('#metric-summary .series')).length > 0);
  await clean(page, 'the job page (stdout)');
  await page.selectOption('#log-stream', 'stderr');
  await waitFor('the stderr markup', 10000, async () => (await text(page, '#log')).includes(markup('stderr')));
  await clean(page, 'the job page (stderr)');
  await page.selectOption('#log-rank', 'supervisor');
  await waitFor('the supervisor\'s log', 10000, async () => (await text(page, '#log')).length > 0);
  await clean(page, 'the job page (supervisor)');

  step('the job list, the host page and the host name');
  let host = '';
  for (const target of ['/jobs', `/jobs?state=${encodeURIComponent(markup('state'))}`, '/host']) {
    await page.goto(daemon.base + target);
    await page.waitForSelector('#live.live-live', { timeout: 10000 });
    await page.waitForTimeout(300);
    await clean(page, target);
    host = await text(page, '#hostname');
  }
  await page.goto(`${daemon.base}/jobs?state=${encodeURIComponent(markup('state'))}`);
  await page.waitForSelector(`tr[data-id="${id}"]`);
  assert.ok((await text(page, 'main')).includes(`There is no job state '${markup('state')}'`), 'an unknown state is named');
  await page.goto(`${daemon.base}/jobs?state=failed`);
  await page.waitForSelector(`tr[data-id="${id}"]`);
  assert.equal(await page.$('.notice.error:not([hidden])'), null, 'a state in lower case is a state');
  if (host === HOST_MARKUP) step('the host name is markup, shown as text');
  else step(`the host name could not be made markup here (it is ${JSON.stringify(host)}): that probe did not run`);

  step('the submit page: problems naming markup keys and a markup file name');
  await page.goto(`${daemon.base}/submit`);
  await page.fill('#yaml', `name: ${JSON.stringify(markup('name'))}\ncommand: [/bin/true]\n${JSON.stringify(markup('key'))}: 1\n`);
  await page.click('button[type="submit"]');
  await page.waitForSelector('#problems:not([hidden]) li');
  assert.ok((await text(page, '#problems')).includes(markup('key')), 'the unknown key is named, as text');
  await clean(page, 'the submit page\'s problems');
  await page.setInputFiles('#yaml-file', { name: `${HOST_MARKUP}.yaml`, mimeType: 'text/yaml', buffer: Buffer.from('name: x\nretries: 3\n') });
  await page.waitForFunction(() => document.getElementById('yaml').value.startsWith('name: x'));
  await page.click('button[type="submit"]');
  await page.waitForSelector(`#problems li button.pos:has-text("${HOST_MARKUP.slice(0, 8)}")`);
  await clean(page, 'the submit page with a markup file name');
  await context.close();
  return id;
}

// A page on another port of this host: the same site, so the session cookie goes with its requests.
async function crossPortPage(browser, daemon, dir, hostileId) {
  step('a page on another port of the same host: forms, a no-cors fetch, a shadowing cookie');
  const victim = await daemon.submit(`name: victim\ncommand: [${PYTHON}, -c, 'import time; time.sleep(300)']\n`);
  await waitFor('the victim job running', 60000, async () => (await daemon.job(victim)).state === 'RUNNING');
  const mark = path.join(dir, 'csrf-mark');
  const d = daemon.base;
  const html = `<!doctype html><body>
<form id=submit method=POST action="${d}/v1/jobs" enctype="text/plain" target=s1><input name="name: evil&#10;command: [/bin/touch, ${mark}]&#10;#" value="x"></form>
<form id=validate method=POST action="${d}/v1/jobs/validate" enctype="text/plain" target=s2><input name="a" value="b"></form>
<form id=cancel method=POST action="${d}/v1/jobs/${victim}/cancel" target=s3></form>
<form id=logout method=POST action="${d}/logout" target=s4></form>
<iframe name=s1></iframe><iframe name=s2></iframe><iframe name=s3></iframe><iframe name=s4></iframe>
<iframe id=frame src="${d}/jobs/${hostileId}"></iframe>
<script>
document.cookie = 'ddp_session_${daemon.port}=junk; Path=/jobs';
document.cookie = 'ddp_session_${daemon.port}=${'0'.repeat(64)}; Path=/v1';
fetch('${d}/v1/jobs', { method: 'POST', mode: 'no-cors', credentials: 'include', headers: { 'Content-Type': 'text/plain' },
  body: 'name: evil2\\ncommand: [/bin/touch, ${mark}]\\n' });
fetch('${d}/v1/jobs/${victim}/cancel', { method: 'POST', mode: 'no-cors', credentials: 'include' });
fetch('${d}/v1/jobs', { credentials: 'include' }).then((r) => r.text()).then((t) => { window.read = t; }, (e) => { window.read = 'refused: ' + e; });
for (const f of ['submit', 'validate', 'cancel', 'logout']) document.getElementById(f).submit();
</script></body>`;
  const evil = http.createServer((req, res) => { res.writeHead(200, { 'Content-Type': 'text/html' }); res.end(html); });
  await new Promise((r) => evil.listen(0, '127.0.0.1', r));
  const context = await browser.newContext();
  try {
    const page = await context.newPage();
    watchConsole(page, 'cross-port');
    await page.goto(uiLink(daemon));
    await page.waitForSelector('h1:text("Jobs")');
    const evilPage = await context.newPage();
    await evilPage.goto(`http://127.0.0.1:${evil.address().port}/`);
    await waitFor('the page\'s own fetch to settle', 10000, () => evilPage.evaluate(() => window.read !== undefined));
    assert.match(await evilPage.evaluate(() => window.read), /^refused: /, 'another origin cannot read the API');
    await evilPage.waitForTimeout(1500);
    const framed = await evilPage.evaluate(() => { try { return document.getElementById('frame').contentDocument?.body?.innerHTML ?? 'no document'; } catch (e) { return 'refused'; } });
    assert.ok(!/csrf|Jobs/.test(framed), `the dashboard in another page's frame: ${framed.slice(0, 100)}`);
    const jobs = (await daemon.api('GET', '/v1/jobs')).body.jobs;
    assert.deepEqual(jobs.filter((j) => j.name.startsWith('evil')), [], 'no job was submitted by the other page');
    assert.ok(!fs.existsSync(mark), 'nothing the other page sent ran');
    assert.equal((await daemon.job(victim)).state, 'RUNNING', 'the other page did not cancel the job');
    const cookies = (await context.cookies()).filter((c) => c.name === `ddp_session_${daemon.port}`);
    assert.ok(cookies.length >= 2, `the shadowing cookies are there: ${JSON.stringify(cookies)}`);
    await page.goto(`${d}/jobs/${hostileId}`);
    await page.waitForSelector('.head-badge .state-failed', { timeout: 10000 });
    await page.waitForSelector('#live.live-live');
    assert.ok(await page.$('meta[name="csrf-token"]'), 'still logged in under Path=/jobs');
    await page.goto(`${d}/jobs`);
    await page.waitForSelector(`tr[data-id="${victim}"]`);
  } finally {
    await context.close();
    evil.close();
    await daemon.api('POST', `/v1/jobs/${victim}/cancel`);
  }
}

async function tokenNotInTheProfile(daemon, dir) {
  step('the login link: the token stays out of the browser profile, the kept URL logs in no more');
  const profile = path.join(dir, 'profile');
  let context = await playwright.chromium.launchPersistentContext(profile, { executablePath: CHROMIUM, args: CHROMIUM_ARGS });
  const link = uiLink(daemon);
  const page = context.pages()[0] || await context.newPage();
  await page.goto(link);
  await page.waitForSelector('h1:text("Jobs")');
  await page.goto(`${daemon.base}/host`);
  await page.waitForSelector('h1:text("Host")');
  await page.waitForTimeout(500);
  await context.close();
  const given = new URL(link).search.slice(1);  // login=CODE (token=TOKEN before the one-time links)
  assert.ok(filesHolding(profile, given).length > 0, 'the history kept the URL it was given (the probe reads the right files)');
  assert.deepEqual(filesHolding(profile, daemon.token), [], 'the daemon\'s token in the browser profile');
  const again = await request(daemon.port, 'GET', new URL(link).pathname + new URL(link).search);
  assert.equal(again.status, 401, 'the URL the history kept logs in no more');
  assert.match(again.body, /used already or has expired/);
  context = null;
}

async function main() {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ddp-dashboard-hostile-'));
  await withDaemonAndBrowser(dir, {}, { wrap: HOSTNAME_WRAP }, async ({ daemon, browser }) => {
    const hostileId = await xssEverywhere(browser, daemon, dir);
    await crossPortPage(browser, daemon, dir, hostileId);
    await tokenNotInTheProfile(daemon, dir);
    // The refused requests show up as console errors on the pages that made them.
    const ours = consoleErrors.filter((e) => !/Failed to load resource|the server responded with a status of (401|403)/.test(e));
    assert.deepEqual(ours, [], 'console errors');
  });
}

main().catch((e) => {
  console.error(e);
  process.exitCode = 1;
});
