// @ts-check
// views/bots/ui.js: the pieces the bots and integrations panels share: labelled fields, a
// scope picker, a button that asks before it acts, and the box that shows a secret the server
// returns once (a token, a setup code, a signing secret) with a Copy button.
import { h, fmt } from '../../dom.js';

export const field = (label, name, attrs = {}) => h('label', { class: 'field' }, h('span', null, label),
  h('input', { type: 'text', name, 'aria-label': label, ...attrs }));

export function select(label, name, options) {
  return h('label', { class: 'field' }, h('span', null, label),
    h('select', { name, 'aria-label': label }, ...options.map(([value, text]) => h('option', { value }, text))));
}

// The spec's scopes and bundles (SPEC §Bot scopes); agent_activity:write is in no bundle.
export const BUNDLES = ['bot:read', 'bot:write', 'bot:admin'];
export const SCOPES = ['workspaces:read', 'channels:read', 'channels:write', 'messages:read', 'messages:write', 'agent_activity:write',
  'threads:read', 'threads:write', 'dms:read', 'dms:write', 'realtime:read', 'uploads:write', 'profile:read', 'commands:write'];

// checks is a group of checkboxes named name, one per option, the checked ones preset.
export function checks(legend, name, options, checked = []) {
  return h('fieldset', { class: 'checks' }, h('legend', null, legend), ...options.map((o) => h('label', { class: 'check' },
    h('input', { type: 'checkbox', name, value: o, checked: checked.includes(o) }), h('span', null, o))));
}

// askFirst is a button that acts on its second press: the first turns it into "label?".
export function askFirst(label, run, cls = 'btn small') {
  const b = h('button', { type: 'button', class: cls, onclick: () => {
    if (b.dataset.armed) { run(); return; }
    b.dataset.armed = '1';
    b.textContent = `${label}?`;
    b.classList.add('danger');
    setTimeout(() => { if (b.isConnected) { delete b.dataset.armed; b.textContent = label; b.classList.remove('danger'); } }, 5000);
  } }, label);
  return b;
}

// secretBox shows a value the server will never show again. It lives only in this element
// (and in the caller's note until onClose): closing it is the end of it in the page.
export function secretBox({ title, value, lines = [], onClose }) {
  const input = h('input', { type: 'text', class: 'secret-value', readOnly: true, value, 'aria-label': title, spellcheck: false });
  const said = h('span', { class: 'muted', role: 'status' });
  const copy = async () => {
    try {
      await navigator.clipboard.writeText(value);
      said.textContent = 'Copied.';
    } catch {
      input.select();
      said.textContent = document.execCommand('copy') ? 'Copied.' : 'Select it and copy it by hand.';
    }
  };
  return h('div', { class: 'secret', role: 'region', 'aria-label': title },
    h('strong', null, title),
    h('p', { class: 'hint' }, 'Shown this once: copy it now. Natter keeps only a hash of it.'),
    h('div', { class: 'secret-row' }, input,
      h('button', { type: 'button', class: 'btn small primary', onclick: copy }, 'Copy'),
      h('button', { type: 'button', class: 'btn small', onclick: onClose }, 'Done')),
    said, ...lines);
}

// when is a timestamp for a person: the time today, or the date and time.
export function when(ts) {
  if (!ts) return '';
  const d = new Date(ts);
  return new Date().toDateString() === d.toDateString() ? fmt.time(d) : `${fmt.day(d)} ${fmt.time(d)}`;
}

// formValues reads a form: its text fields trimmed, and every checkbox group as a list.
export function formValues(form) {
  const f = new FormData(form);
  const out = {};
  for (const [k, v] of f) {
    const el = form.elements[k];
    const many = el instanceof RadioNodeList ? el[0].type === 'checkbox' : el && el.type === 'checkbox';
    if (many) (out[k] = out[k] || []).push(String(v));
    else out[k] = String(v).trim();
  }
  return out;
}

// redraw replaces body's content with fill(); when keep is true (the last change was refused),
// what was typed in its forms is put back, so a refusal costs no typing.
export function redraw(body, keep, fill) {
  const forms = () => [...body.querySelectorAll('form[aria-label]')];
  const saved = keep ? forms().map((f) => [f.getAttribute('aria-label'), [...f.elements].map((el) => [el.name, el.value, el.checked])]) : [];
  fill();
  for (const [label, fields] of saved) {
    const f = forms().find((x) => x.getAttribute('aria-label') === label);
    if (!f) continue;
    fields.forEach(([name, value, checked], i) => {
      const el = f.elements[i];
      if (!el || el.name !== name) return;
      if (el.type === 'checkbox' || el.type === 'radio') el.checked = checked;
      else if (el.type !== 'submit' && el.type !== 'button') el.value = value;
    });
  }
}
