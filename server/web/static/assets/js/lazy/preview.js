// @ts-check
// lazy/preview.js shows an attachment in the side panel within the spec's client limits
// (SPEC §Limits, "Artifact preview"); anything past a limit, or that cannot be read, falls
// back to the authenticated download (the same-origin link, sent with the session cookie).
import { h, replace } from '../dom.js';
import { safeURL } from '../markdown.js';

const KiB = 1024;
const MiB = 1024 * KiB;
export const limits = {
  text: 2 * MiB, // text, code, Markdown and HTML
  highlight: 256 * KiB, highlightMs: 2000, highlightOutput: 2 * MiB,
  ooxml: 24 * MiB, ooxmlExpanded: 12 * MiB, ooxmlMs: 5000,
  // The spec sets no time for rendering Markdown; it gets the parsers' 5 seconds.
  markdownMs: 5000,
  pdf: 64 * MiB,
};

class Fallback extends Error {}

const sizeText = (n) => (n >= MiB ? `${(n / MiB).toFixed(1)} MB` : `${Math.max(1, Math.round(n / KiB))} KB`);
const mib = (n) => (n >= MiB ? `${n / MiB} MiB` : `${n / KiB} KiB`);

// show fills box with the preview of upload u of the given kind (views/preview.js).
export async function show(box, u, kind, closed) {
  const url = `/api/uploads/${encodeURIComponent(u.id)}`;
  const download = h('a', { class: 'btn small', href: url, download: u.filename || '' }, 'Download');
  const head = h('div', { class: 'preview-head' }, h('span', { class: 'preview-name' }, u.filename || 'file'),
    h('span', { class: 'muted' }, sizeText(u.byte_size || 0)), download);
  // The stage scrolls: it takes the keyboard's focus so it can be scrolled without a mouse.
  const stage = h('div', { class: 'preview-stage', tabindex: '0', role: 'region', 'aria-label': `Preview of ${u.filename || 'the file'}` },
    h('p', { class: 'muted pad' }, 'Loading preview…'));
  replace(box, head, stage);
  box.dataset.kind = kind.kind;
  try {
    await kinds[kind.kind](stage, u, url, kind, closed);
    box.dataset.state = 'shown';
  } catch (e) {
    if (!(e instanceof Fallback)) console.warn('preview failed', e);
    box.dataset.state = 'fallback';
    replace(stage, h('div', { class: 'preview-fallback' }, h('p', null, e.message),
      h('a', { class: 'btn', href: url, download: u.filename || '' }, `Download ${u.filename || 'the file'}`)));
  }
}

// fetchLimited reads the upload with the session, refusing it as soon as it passes max bytes
// (the size the server recorded is checked first, the bytes themselves as they arrive).
async function fetchLimited(url, u, max, what) {
  if ((u.byte_size || 0) > max) throw new Fallback(`Too large to preview: ${what} previews stop at ${mib(max)}.`);
  const res = await fetch(url, { credentials: 'same-origin' });
  if (!res.ok) throw new Fallback(`The file could not be read (${res.status}).`);
  const reader = res.body.getReader();
  const chunks = [];
  let n = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    n += value.length;
    if (n > max) { reader.cancel().catch(() => {}); throw new Fallback(`Too large to preview: ${what} previews stop at ${mib(max)}.`); }
    chunks.push(value);
  }
  const out = new Uint8Array(n);
  let at = 0;
  for (const c of chunks) { out.set(c, at); at += c.length; }
  return out;
}

const fetchText = async (url, u, what) => new TextDecoder().decode(await fetchLimited(url, u, limits.text, what));

// runWorker starts a module worker, sends it msg and settles with its answer, or stops it
// (terminate) when ms pass first, or when the preview closes.
export function runWorker(file, msg, ms, transfer = [], closed = () => false) {
  return new Promise((resolve, reject) => {
    const w = new Worker(new URL(file, import.meta.url), { type: 'module', name: file });
    const stop = (fn, v) => { clearTimeout(timer); clearInterval(watch); w.terminate(); fn(v); };
    const timer = setTimeout(() => stop(reject, new Timeout()), ms);
    const watch = setInterval(() => { if (closed()) stop(reject, new Error('closed')); }, 250);
    w.onmessage = (e) => stop(resolve, e.data);
    w.onerror = (e) => { e.preventDefault(); stop(reject, new Error(e.message || 'worker failed')); };
    w.postMessage(msg, transfer);
  });
}
export class Timeout extends Error {}

const kinds = {
  async text(stage, u, url) {
    replace(stage, h('pre', { class: 'preview-text' }, await fetchText(url, u, 'text')));
  },

  // Markdown shows as plain text at once, then rendered by markdown.js in a worker.
  async markdown(stage, u, url, kind, closed) {
    const text = await fetchText(url, u, 'Markdown');
    const pre = h('pre', { class: 'preview-text' }, text);
    const note = h('p', { class: 'muted preview-note' }, 'Rendering…');
    const box = h('div', { class: 'preview-md body', dataset: { render: 'pending' } }, pre);
    replace(stage, note, box);
    try {
      const res = await runWorker('./markdown-worker.js', { text }, limits.markdownMs, [], closed);
      if (res.error) throw new Error(res.error);
      replace(box, ...res.tree.map(rebuild));
      box.dataset.render = 'done';
      note.remove();
    } catch (e) {
      if (closed()) return;
      box.dataset.render = e instanceof Timeout ? 'timeout' : 'failed';
      note.textContent = e instanceof Timeout
        ? `Shown as plain text: rendering took longer than ${limits.markdownMs / 1000} seconds.`
        : 'Shown as plain text: it could not be rendered.';
    }
  },

  // HTML is shown in a frame with an empty sandbox: no script, no same origin, no forms, no
  // popups. It is given as srcdoc (nothing to fetch), inherits the page's policy, and the csp
  // attribute narrows that to images of this origin or data: — a remote image would tell
  // another server who opened the file.
  async html(stage, u, url) {
    const text = await fetchText(url, u, 'HTML');
    const frame = h('iframe', { class: 'preview-html', title: `Preview of ${u.filename || 'an HTML file'}`, referrerPolicy: 'no-referrer' });
    frame.setAttribute('sandbox', '');
    frame.setAttribute('csp', "default-src 'none'; img-src 'self' data:; style-src 'self'");
    frame.srcdoc = text;
    replace(stage, frame);
  },

  // Code shows as plain text at once, then highlighted when the worker answers in time.
  async code(stage, u, url, kind, closed) {
    const text = await fetchText(url, u, 'code');
    const pre = h('pre', { class: 'preview-code', dataset: { lang: kind.lang, highlight: 'pending' } }, text);
    const note = h('p', { class: 'muted preview-note' });
    replace(stage, note, pre);
    if (text.length > limits.highlight || (u.byte_size || 0) > limits.highlight) {
      pre.dataset.highlight = 'too-large';
      note.textContent = `Shown without highlighting: highlighting stops at ${mib(limits.highlight)}.`;
      return;
    }
    try {
      const res = await runWorker('./highlight-worker.js', { text, lang: kind.lang, cap: limits.highlightOutput }, limits.highlightMs, [], closed);
      if (res.error) {
        pre.dataset.highlight = res.error === 'output' ? 'output-cap' : 'failed';
        note.textContent = res.error === 'output'
          ? `Shown without highlighting: it would pass ${mib(limits.highlightOutput)} of output.`
          : 'Shown without highlighting.';
        return;
      }
      replace(pre, ...JSON.parse(res.out).map((r) => (typeof r === 'string' ? r : h('span', { class: `tok-${r[0]}` }, r[1]))));
      pre.dataset.highlight = 'done';
      note.remove();
    } catch (e) {
      if (!(e instanceof Timeout)) throw e;
      pre.dataset.highlight = 'timeout';
      note.textContent = `Shown without highlighting: it took longer than ${limits.highlightMs / 1000} seconds.`;
    }
  },

  // PDF opens in the browser's own viewer, in a frame of the upload itself.
  async pdf(stage, u, url) {
    if ((u.byte_size || 0) > limits.pdf) throw new Fallback(`Too large to preview: PDF previews stop at ${mib(limits.pdf)}.`);
    replace(stage, h('iframe', { class: 'preview-pdf', title: `PDF ${u.filename || ''}`, src: url }),
      h('p', { class: 'pad' }, h('a', { href: url, target: '_blank', rel: 'noopener' }, 'Open in a new tab')));
  },

  xlsx: (stage, u, url, kind, closed) => office(stage, u, url, 'xlsx', closed),
  pptx: (stage, u, url, kind, closed) => office(stage, u, url, 'pptx', closed),
};

// office parses an XLSX or PPTX in a worker: the file within the compressed limit, what its
// parts expand to within the expanded limit, all within the time limit.
async function office(stage, u, url, kind, closed) {
  const bytes = await fetchLimited(url, u, limits.ooxml, 'Office');
  replace(stage, h('p', { class: 'muted pad' }, 'Reading…'));
  let res;
  try {
    res = await runWorker('./ooxml-worker.js', { kind, bytes: bytes.buffer, expanded: limits.ooxmlExpanded }, limits.ooxmlMs, [bytes.buffer], closed);
  } catch (e) {
    if (e instanceof Timeout) throw new Fallback(`No preview: reading the file took longer than ${limits.ooxmlMs / 1000} seconds.`);
    throw e;
  }
  if (res.error === 'expanded') throw new Fallback(`No preview: the file expands past ${mib(limits.ooxmlExpanded)}.`);
  if (res.error) throw new Fallback(`No preview: the file could not be read (${res.message}).`);
  if (res.sheets) replace(stage, ...res.sheets.map(sheetTable));
  else replace(stage, ...(res.slides.length ? res.slides.map(slide) : [h('p', { class: 'muted pad' }, 'The presentation has no slides.')]));
}

function sheetTable(s) {
  const cols = Math.max(0, ...s.rows.map((r) => r.length));
  const letters = (i) => { let n = i + 1; let out = ''; while (n) { const m = (n - 1) % 26; out = String.fromCharCode(65 + m) + out; n = (n - m - 1) / 26; } return out; };
  const more = s.totalRows > s.rows.length || s.totalCols > cols;
  return h('section', { class: 'preview-sheet' },
    h('h3', null, s.name),
    h('div', { class: 'preview-scroll' }, h('table', null,
      h('thead', null, h('tr', null, h('th', null, ''), ...Array.from({ length: cols }, (_, i) => h('th', { scope: 'col' }, letters(i))))),
      h('tbody', null, ...s.rows.map((r, i) => h('tr', null, h('th', { scope: 'row' }, String(i + 1)),
        ...Array.from({ length: cols }, (_, j) => h('td', null, r[j] ?? ''))))))),
    more ? h('p', { class: 'muted preview-note' }, `Showing ${s.rows.length} of ${s.totalRows} rows and ${cols} of ${s.totalCols} columns.`) : null);
}

function slide(paras, i) {
  return h('section', { class: 'preview-slide' }, h('h3', null, `Slide ${i + 1}`),
    ...(paras.length ? paras.map((p) => h('p', null, p)) : [h('p', { class: 'muted' }, 'No text on this slide.')]));
}

// What markdown.js builds, and so all the page rebuilds from a worker's tree: any other tag
// becomes its text, and a link's address is checked again here.
const markdownTags = new Set(['p', 'br', 'strong', 'em', 's', 'code', 'pre', 'blockquote', 'ul', 'ol', 'li', 'a', 'span']);

function rebuild(n) {
  if (typeof n.text === 'string') return document.createTextNode(n.text);
  const kids = (n.children || []).map(rebuild);
  if (!markdownTags.has(n.tag)) return h('span', null, ...kids);
  const el = h(n.tag, { class: typeof n.className === 'string' ? n.className : undefined }, ...kids);
  if (n.tag === 'a') {
    const href = safeURL(n.href);
    if (!href) return h('span', null, ...kids);
    Object.assign(el, { href, target: '_blank', rel: 'noopener noreferrer' });
  }
  return el;
}
