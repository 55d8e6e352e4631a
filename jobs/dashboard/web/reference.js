// The job file reference (/reference): jobs/README.md's "The job file" section, embedded in the
// daemon at build time (/assets/job-file.md), so that a browser user who has no jobs/README.md
// sees every key. Shown as the docs write it: its ### headings (each with an anchor, listed at the
// top), paragraphs, lists, `code` and the fenced YAML examples; all of it as text, never markup.
import { el } from './format.js';

const slug = (s) => s.toLowerCase().replace(/[^a-z0-9]+/g, '-').replace(/^-|-$/g, '');

// `a` and `b` → ['a', <code>b</code>]: the text between backticks is code.
function inline(text) {
  return text.split('`').map((part, i) => (i % 2 ? el('code', {}, part) : part));
}

// The section's lines → elements: headings, fenced blocks, lists and paragraphs (blank-line separated).
function render(markdown) {
  const out = [];
  const toc = [];
  let para = [];
  let list = null;
  let fence = null;
  const flush = () => {
    if (para.length) out.push(el('p', {}, inline(para.join(' '))));
    para = [];
  };
  for (const line of markdown.split('\n')) {
    if (fence) {
      if (line.startsWith('```')) {
        out.push(el('pre', { class: 'spec' }, el('code', {}, fence.join('\n'))));
        fence = null;
      } else {
        fence.push(line);
      }
      continue;
    }
    if (line.startsWith('```')) {
      flush();
      list = null;
      fence = [];
    } else if (line.startsWith('## ')) {
      flush();
      list = null;
      out.push(el('p', { class: 'muted' }, inline(line.slice(3))));
    } else if (line.startsWith('### ')) {
      flush();
      list = null;
      const title = line.slice(4);
      const id = slug(title);
      toc.push(el('li', {}, el('a', { href: `#${id}` }, title)));
      out.push(el('h2', { id }, inline(title)));
    } else if (line.startsWith('- ')) {
      flush();
      if (!list) out.push(list = el('ul', {}));
      list.append(el('li', {}, inline(line.slice(2))));
    } else if (!line.trim()) {
      flush();
      list = null;
    } else if (list && line.startsWith('  ')) {
      list.lastElementChild.append(' ', ...inline(line.trim()));
    } else {
      para.push(line.trim());
    }
  }
  flush();
  return { body: out, toc };
}

export function mount(main) {
  const status = el('p', { class: 'notice', role: 'status' }, 'Loading…');
  const card = el('article', { class: 'card reference', id: 'reference' });
  main.append(el('div', { class: 'page-head' }, el('h1', {}, 'Job file reference')), status, card);
  let live = true;
  fetch('/assets/job-file.md', { credentials: 'same-origin' }).then(async (r) => {
    if (!live) return;
    if (!r.ok) throw new Error(`HTTP ${r.status}`);
    const { body, toc } = render(await r.text());
    status.remove();
    card.append(el('nav', { 'aria-label': 'Keys' }, el('ul', { class: 'toc' }, toc)), ...body);
    if (location.hash) document.getElementById(location.hash.slice(1))?.scrollIntoView();
  }).catch((e) => {
    status.textContent = `The reference could not be loaded: ${e.message}`;
    status.className = 'notice error';
  });
  return () => { live = false; };
}
