// Submit a job: paste its YAML or load a file, send it; the daemon's problems come back with their
// line:column (every problem at once), each a button that puts the cursor there.
import { api, navigate } from './app.js';
import { clear, el } from './format.js';

const EXAMPLE = `name: my-training
command: [python3, train.py]          # an argv list: no shell in between
args: [--epochs, "10"]
workdir: /path/to/project             # absolute
resources: {nproc_per_node: 2, gpus_per_node: 0}
distributed: {backend: gloo, max_restarts: 1}
metrics: {loss: 'loss=([0-9.eE+-]+)'} # charted on the job's page
`;

export function mount(main) {
  let fileName = 'job.yaml';
  const yaml = el('textarea', { id: 'yaml', name: 'yaml', rows: '18', spellcheck: 'false', autocomplete: 'off',
    'aria-describedby': 'yaml-help', placeholder: EXAMPLE, required: true });
  const file = el('input', { type: 'file', id: 'yaml-file', accept: '.yaml,.yml,text/yaml,application/yaml,text/plain',
    onchange: async () => {
      const f = file.files[0];
      if (!f) return;
      fileName = f.name;
      yaml.value = await f.text();
      source.textContent = `Loaded ${f.name} (${f.size} bytes).`;
      yaml.focus();
    } });
  const source = el('span', { class: 'muted small', 'aria-live': 'polite' });
  const problems = el('div', { class: 'problems', id: 'problems', role: 'alert', hidden: true });
  const send = el('button', { type: 'submit', class: 'primary' }, 'Submit');
  const form = el('form', { class: 'card submit-form', novalidate: true, onsubmit: (ev) => { ev.preventDefault(); submit(); } },
    el('label', { for: 'yaml' }, 'Job file (YAML)'),
    el('p', { id: 'yaml-help', class: 'muted small' },
      'Paste a job file or load one. Every key is described in the ',
      // A new tab: the text typed here stays.
      el('a', { href: '/reference', target: '_blank', rel: 'noopener', id: 'reference-link' }, 'job file reference'),
      '; relative paths are the daemon\'s.'),
    yaml,
    el('div', { class: 'form-row' },
      el('label', { class: 'button file-button', for: 'yaml-file' }, 'Load a file…'), file, source,
      el('button', { type: 'button', class: 'ghost', onclick: () => { yaml.value = EXAMPLE; fileName = 'job.yaml'; yaml.focus(); } }, 'Insert the example')),
    problems,
    el('div', { class: 'form-row end' }, send));
  main.append(el('div', { class: 'page-head' }, el('h1', {}, 'Submit a job')), form);
  yaml.addEventListener('input', () => { if (!file.files.length) fileName = 'job.yaml'; });

  // Puts the cursor at line:column (1-based) of the text area.
  function goTo(line, column) {
    const lines = yaml.value.split('\n');
    let at = 0;
    for (let i = 0; i < Math.min(line - 1, lines.length); i++) at += lines[i].length + 1;
    at += Math.max(0, column - 1);
    yaml.focus();
    yaml.setSelectionRange(at, at);
    const lineHeight = yaml.scrollHeight / Math.max(lines.length, 1);
    yaml.scrollTop = Math.max(0, (line - 3) * lineHeight);
  }

  function showProblems(body) {
    const list = body.problems && body.problems.length ? body.problems : null;
    clear(problems,
      el('h2', {}, list ? `The job file has ${list.length} problem${list.length > 1 ? 's' : ''}` : 'The daemon refused the job'),
      list
        ? el('ul', {}, list.map((p) => el('li', {},
          p.line > 0
            ? el('button', { type: 'button', class: 'pos', onclick: () => goTo(p.line, p.column) }, `${fileName}:${p.line}:${p.column}`)
            : el('code', {}, fileName),
          ' ', p.message)))
        : el('p', {}, body.error || 'unknown error'));
    problems.hidden = false;
  }

  async function submit() {
    problems.hidden = true;
    if (!yaml.value.trim()) {
      showProblems({ error: 'The job file is empty: paste one, load one, or insert the example.' });
      return;
    }
    send.disabled = true;
    const headers = { 'Content-Type': 'application/yaml', 'X-Ddp-File': fileName };
    try {
      // Checked first: the daemon's verdict on a bad file is an answer (200), not a failed request
      // (which browsers log as an error).
      const check = await api('POST', '/v1/jobs/validate', yaml.value, headers);
      if (check.status !== 200 || !check.body.ok) {
        showProblems(check.body);
        return;
      }
      const r = await api('POST', '/v1/jobs', yaml.value, headers);
      if (r.status === 201) navigate(`/jobs/${r.body.id}`);
      else showProblems(r.body);
    } catch (e) {
      showProblems({ error: `The daemon did not answer: ${e.message}` });
    } finally {
      send.disabled = false;
    }
  }
  return () => {};
}
