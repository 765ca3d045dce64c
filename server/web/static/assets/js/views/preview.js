// @ts-check
// views/preview.js: the "Preview" button under an attachment and the side panel that shows it.
// Only the choice of kind lives here (it is needed to draw every message row); the readers,
// parsers and workers are in lazy/, imported when a preview is opened, so a first paint does
// not pay for them.
import { h, replace } from '../dom.js';
import { registerPanel } from './registry.js';
import * as actions from '../actions.js';

const ext = (name) => { const m = /\.([a-z0-9]+)$/i.exec(name || ''); return m ? m[1].toLowerCase() : ''; };

// Languages the highlighter knows, by file extension (lazy/highlight-worker.js).
const languages = { go: 'go', js: 'js', mjs: 'js', cjs: 'js', ts: 'js', jsx: 'js', json: 'json', py: 'python', sh: 'shell', bash: 'shell', css: 'css' };
const textual = new Set(['txt', 'log', 'csv', 'tsv', 'ini', 'toml', 'yaml', 'yml', 'conf', 'sql', 'c', 'h', 'rs', 'java', 'rb', 'xml', 'svg']);

// previewKind names how an upload is previewed: { kind, lang? }, or null when it is only
// downloaded (images show inline already; DOCX is download only, as the spec says).
export function previewKind(u) {
  const type = String(u.content_type || '').split(';')[0].trim().toLowerCase();
  const e = ext(u.filename);
  if (type.startsWith('image/') && type !== 'image/svg+xml') return null;
  if (type === 'application/pdf' || e === 'pdf') return { kind: 'pdf' };
  if (e === 'xlsx' || type === 'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet') return { kind: 'xlsx' };
  if (e === 'pptx' || type === 'application/vnd.openxmlformats-officedocument.presentationml.presentation') return { kind: 'pptx' };
  if (e === 'docx') return null;
  if (e === 'html' || e === 'htm' || type === 'text/html') return { kind: 'html' };
  if (e === 'md' || e === 'markdown' || type === 'text/markdown') return { kind: 'markdown' };
  if (languages[e]) return { kind: 'code', lang: languages[e] };
  if (type.startsWith('text/') || textual.has(e) || type === 'application/json') return { kind: 'text' };
  return null;
}

// previewButton is the button drawn beside a file attachment, or null.
export function previewButton(u) {
  const k = previewKind(u);
  if (!k) return null;
  return h('button', { class: 'btn small preview-open', type: 'button', 'aria-label': `Preview ${u.filename || 'file'}`,
    onclick: () => actions.openPanel({ kind: 'preview', upload: u }) }, 'Preview');
}

registerPanel('preview', {
  title: 'Preview',
  render(body, panel, { fresh }) {
    if (!fresh) return;
    const box = h('div', { class: 'preview', role: 'document' }, h('p', { class: 'muted pad' }, 'Loading preview…'));
    replace(body, box);
    // The panel closing (or showing something else) ends any worker the preview started.
    const closed = () => !box.isConnected;
    import('../lazy/preview.js')
      .then((m) => m.show(box, panel.upload, previewKind(panel.upload), closed))
      .catch((e) => replace(box, h('p', { class: 'error pad' }, `The preview could not load: ${e.message}`)));
  },
});

