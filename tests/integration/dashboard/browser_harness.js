'use strict';
// What the dashboard's browser tests share: the paths from ctest's environment, playwright-core
// (installed by the build's npm ci) and Debian's chromium, a real `ddp-launch daemon --listen` in a
// directory of its own, one HTTP request to it, waits with a timeout that says what it waited for,
// and the browser's console errors (any one fails a test).
const { spawn } = require('node:child_process');
const fs = require('node:fs');
const http = require('node:http');
const path = require('node:path');
const readline = require('node:readline');

const ENV = (name, fallback) => process.env[name] || fallback;
const DDP_LAUNCH = path.resolve(ENV('DDP_LAUNCH', 'build/bin/ddp-launch'));
const PYTHON = ENV('DDP_TEST_PYTHON', '/usr/bin/python3');
const CHROMIUM = ENV('DDP_CHROMIUM', '/usr/bin/chromium');
const ARTIFACTS = ENV('DDP_ARTIFACTS', path.resolve('test-artifacts/dashboard'));
// Chromium as root, headless, on a machine without a network: nothing it would fetch by itself.
const CHROMIUM_ARGS = ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
  '--disable-background-networking', '--disable-component-update', '--disable-sync', '--disable-dev-shm-usage'];

let playwright;
try {
  playwright = require(path.join(ENV('DDP_NODE_MODULES', 'build/jobs/dashboard/npm/node_modules'), 'playwright-core'));
} catch (e) {
  console.error(`playwright-core is missing (${e.message}): the build installs it with npm ci (jobs/dashboard).`);
  process.exit(1);
}
if (!fs.existsSync(CHROMIUM)) {
  console.error(`${CHROMIUM} is missing: ./packaging/install-deps.sh installs Debian's chromium.`);
  process.exit(1);
}

const step = (what) => console.log(`[${new Date().toISOString().slice(11, 23)}] ${what}`);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
// For a race: a timer that does not keep node running once the race is decided.
const later = (ms) => new Promise((r) => setTimeout(r, ms).unref());

async function waitFor(what, timeoutMs, fn) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs / 1000} s waiting for ${what}`);
    await sleep(200);
  }
}

function alive(pid) {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[0] !== 'Z';
  } catch (e) {
    return false;
  }
}

// One HTTP request to the daemon's TCP address: {status, headers, body} (JSON parsed when it is).
function request(port, method, target, { headers = {}, body } = {}) {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port, method, path: target, headers, timeout: 30000 }, (res) => {
      let data = '';
      res.setEncoding('utf8');
      res.on('data', (c) => { data += c; });
      res.on('end', () => {
        let parsed = data;
        if ((res.headers['content-type'] || '').includes('json')) parsed = JSON.parse(data);
        resolve({ status: res.statusCode, headers: res.headers, body: parsed });
      });
    });
    req.on('timeout', () => req.destroy(new Error(`${method} ${target}: no answer in 30 s`)));
    req.on('error', reject);
    if (body !== undefined) req.write(body);
    req.end();
  });
}

class Daemon {
  // `wrap`: argv run before the daemon's own (it must exec the rest), e.g. to give it a host name.
  // `cwd`: the daemon's working directory, where a job without workdir: starts (default: the test's).
  constructor(dir, env, { wrap = [], cwd } = {}) {
    this.dir = dir;
    this.state = path.join(dir, 'state');
    this.socket = path.join(dir, 'd.sock');
    this.log = fs.openSync(path.join(dir, 'daemon.log'), 'a');
    const argv = [...wrap, DDP_LAUNCH, 'daemon', '--state-dir', this.state, '--socket', this.socket,
      '--listen', '127.0.0.1:0', '--slots', '4'];
    this.proc = spawn(argv[0], argv.slice(1), { cwd, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', this.log] });
  }

  async ready() {
    const lines = readline.createInterface({ input: this.proc.stdout });
    const line = await Promise.race([
      new Promise((resolve) => lines.on('line', (l) => { if (l.startsWith('listening unix=')) resolve(l); })),
      later(30000).then(() => { throw new Error('the daemon printed no ready line within 30 s'); }),
    ]);
    this.port = Number(/tcp=127\.0\.0\.1:(\d+)/.exec(line)[1]);
    this.token = fs.readFileSync(path.join(this.state, 'token'), 'utf8').trim();
    this.base = `http://127.0.0.1:${this.port}`;
    return this;
  }

  api(method, target, body, headers = {}) {
    return request(this.port, method, target, { body, headers: { Authorization: `Bearer ${this.token}`, ...headers } });
  }

  async submit(yaml) {
    const r = await this.api('POST', '/v1/jobs', yaml, { 'X-Ddp-File': 'job.yaml' });
    if (r.status !== 201) throw new Error(`submit: ${r.status} ${JSON.stringify(r.body)}`);
    return r.body.id;
  }

  async job(id) { return (await this.api('GET', `/v1/jobs/${id}`)).body; }

  tail() { return fs.readFileSync(path.join(this.dir, 'daemon.log'), 'utf8').slice(-4000); }

  async stop() {
    if (this.proc.exitCode === null) {
      this.proc.kill('SIGTERM');
      await Promise.race([new Promise((r) => this.proc.once('exit', r)), later(10000)]);
    }
    // Whatever supervisor is left (a failed test): its process group.
    for (const pid of fs.readdirSync('/proc').filter((p) => /^\d+$/.test(p))) {
      try {
        const argv = fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
        if (argv[1] === 'run' && argv.some((a) => a.startsWith(this.state))) process.kill(-Number(pid), 'SIGKILL');
      } catch (e) { /* gone */ }
    }
  }
}

// The browser's console errors and page errors: any one fails the test.
const consoleErrors = [];
function watchConsole(page, name) {
  page.on('console', (m) => { if (m.type() === 'error') consoleErrors.push(`${name}: console: ${m.text()}`); });
  page.on('pageerror', (e) => consoleErrors.push(`${name}: page error: ${e.message}`));
}

// Runs body({daemon, browser}) against a daemon started in `dir` (new Daemon(dir, env, options)) and a
// headless chromium; stops both whatever happens, prints the console errors, and removes `dir` when
// body succeeded (else prints where it is and the daemon's log tail).
async function withDaemonAndBrowser(dir, env, options, body) {
  const daemon = new Daemon(dir, env, options);
  let browser;
  let passed = false;
  try {
    await daemon.ready();
    step(`daemon on ${daemon.base}`);
    browser = await playwright.chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS });
    await body({ daemon, browser });
    passed = true;
    step('passed');
  } finally {
    if (browser) await browser.close();
    await daemon.stop();
    if (consoleErrors.length) console.error(consoleErrors.join('\n'));
    if (!passed) console.error(`daemon log (${dir}):\n${daemon.tail()}`);
    else fs.rmSync(dir, { recursive: true, force: true });
  }
}

module.exports = {
  ENV, DDP_LAUNCH, PYTHON, CHROMIUM, CHROMIUM_ARGS, ARTIFACTS, playwright, step, sleep, waitFor, alive, request,
  Daemon, consoleErrors, watchConsole, withDaemonAndBrowser,
};
