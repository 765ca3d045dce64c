// @ts-check
// lazy/picker.js is the emoji picker, opened by a message's "Add reaction" and by the composers'
// emoji button: a search field (name or shortcode), the skin tone, the categories, and the whole
// table with "Frequently used" first. Arrows move between emoji (one Tab stop for the grid),
// Enter or a click chooses, ↓ in the search field goes to the results and Enter there takes
// the first, Esc closes and gives the focus back to the button that opened it. It brings its
// own style sheet (assets/picker.css), so a first visit pays for neither.
import { h, replace } from '../dom.js';
import { load, search, recent, remember, tone, setTone, toned, entryOf } from './emoji.js';

const COLS = 8; // the grid's columns (picker.css)
const TONE_NAMES = ['Default', 'Light', 'Medium-light', 'Medium', 'Medium-dark', 'Dark'];

let open = null; // { el, anchor }
let sheet = null;

function style() {
  sheet ||= new Promise((resolve) => {
    const link = h('link', { rel: 'stylesheet', href: '/assets/picker.css' });
    link.addEventListener('load', resolve);
    link.addEventListener('error', resolve);
    document.head.appendChild(link);
  });
  return sheet;
}

// closePicker removes the picker; refocus gives the focus back to what opened it.
export function closePicker(refocus = true) {
  if (!open) return;
  const { el, anchor } = open;
  open = null;
  el.remove();
  document.removeEventListener('mousedown', outside, true);
  if (refocus && anchor.isConnected) anchor.focus();
}

function outside(e) {
  if (open && !open.el.contains(e.target) && !open.anchor.contains(e.target)) closePicker(false);
}

// insert puts c at the caret of a composer's box, as if typed.
function insert(box, c) {
  const start = box.selectionStart ?? box.value.length;
  box.setRangeText(c, start, box.selectionEnd ?? start, 'end');
  box.focus();
  box.dispatchEvent(new Event('input', { bubbles: true }));
}

// openPicker opens the picker by anchor (pressed again, it closes). The emoji chosen, in the skin
// tone chosen, goes to onPick(character), or in at the caret when onPick is a composer's box.
export async function openPicker(anchor, onPick, label = 'Choose an emoji') {
  if (typeof onPick !== 'function') { const box = onPick; onPick = (c) => insert(box, c); }
  if (open && open.anchor === anchor) { closePicker(); return; }
  closePicker(false);
  const input = h('input', { type: 'search', class: 'emoji-search', placeholder: 'Search emoji', autocomplete: 'off', spellcheck: false,
    'aria-label': 'Search emoji by name or shortcode' });
  const tones = h('select', { class: 'emoji-tone', 'aria-label': 'Skin tone' },
    ...TONE_NAMES.map((n, i) => h('option', { value: String(i), title: n }, `${String.fromCodePoint(0x270B)}${i ? String.fromCodePoint(0x1F3FA + i) : ''}`)));
  const nav = h('div', { class: 'emoji-nav', role: 'group', 'aria-label': 'Categories' });
  const body = h('div', { class: 'emoji-body' }, h('p', { class: 'emoji-note' }, 'Loading emoji…'));
  // The line at the bottom names the emoji in focus (a screen reader hears its button already);
  // the number found is told once, politely.
  const status = h('p', { class: 'emoji-status' });
  const live = h('p', { class: 'emoji-live', 'aria-live': 'polite' });
  const el = h('div', { class: 'emoji-picker', role: 'dialog', 'aria-label': label }, h('div', { class: 'emoji-top' }, input, tones), nav, body, status, live);
  open = { el, anchor };
  const mine = open;
  document.addEventListener('mousedown', outside, true);
  await style();
  if (open !== mine) return;
  document.body.appendChild(el);
  place(el, anchor);
  input.focus();

  let t;
  try { t = await load(); } catch (err) { replace(body, h('p', { class: 'emoji-note error' }, err.message)); return; }
  if (open !== mine) return;
  tones.value = String(tone());
  const choose = (c) => { remember(c); closePicker(); onPick(c); };
  const button = (e) => {
    const c = toned(e);
    return h('button', { type: 'button', class: 'emoji-btn', tabIndex: -1, 'aria-label': e.n, title: e.codes.length ? `:${e.codes[0]}:` : e.n,
      dataset: { c } }, c);
  };
  const section = (name, list, i) => h('div', { class: 'emoji-section', dataset: { name } },
    h('h3', { id: `emoji-cat-${i}` }, name), h('div', { class: 'emoji-grid', role: 'group', 'aria-labelledby': `emoji-cat-${i}` }, ...list.map(button)));
  let drawn = 0;
  const draw = () => {
    drawn++;
    const q = input.value.trim();
    if (q) {
      const found = search(t, q, 240);
      replace(body, found.length ? section('Search results', found, 'r') : h('p', { class: 'emoji-note' }, `No emoji match “${q}”.`));
      status.textContent = live.textContent = `${found.length} emoji found`;
    } else {
      const used = recent().map((c) => { const e = entryOf(t, c); return e && { ...e, c, tones: false }; }).filter(Boolean);
      const shown = t.categories.map((c) => c.list.filter((e) => !e.hidden));
      const parts = t.categories.map((c, i) => section(c.name, i ? [] : shown[i], i));
      replace(body, section('Frequently used', used, 'f'), ...parts);
      status.textContent = live.textContent = '';
      // The other categories' 1,700 buttons come after the first paint, so the picker opens at once.
      const now = drawn;
      setTimeout(() => { if (drawn === now) parts.forEach((p, i) => { if (i) p.lastChild.append(...shown[i].map(button)); }); });
    }
    const first = body.querySelector('.emoji-btn');
    if (first) first.tabIndex = 0;
  };
  replace(nav, ...t.categories.map((c, i) => h('button', { type: 'button', class: 'emoji-cat', 'aria-label': c.name, title: c.name,
    onclick: () => {
      if (input.value) { input.value = ''; draw(); }
      const b = body.querySelector(`#emoji-cat-${i} + .emoji-grid .emoji-btn`);
      if (b) { body.querySelector(`#emoji-cat-${i}`).scrollIntoView({ block: 'start' }); go(b, false); }
    } }, c.list[0].c)));
  draw();

  // go moves the grid's one Tab stop to b and focuses it; the status line names it.
  const go = (b, scroll = true) => {
    body.querySelectorAll('.emoji-btn[tabindex="0"]').forEach((x) => { x.tabIndex = -1; });
    b.tabIndex = 0;
    b.focus({ preventScroll: !scroll });
    if (scroll) b.scrollIntoView({ block: 'nearest' });
  };
  body.addEventListener('click', (e) => { const b = e.target.closest('.emoji-btn'); if (b) choose(b.dataset.c); });
  body.addEventListener('focusin', (e) => {
    const b = e.target.closest('.emoji-btn');
    if (b) status.textContent = `${b.getAttribute('aria-label')} ${b.title.startsWith(':') ? b.title : ''}`;
  });
  body.addEventListener('keydown', (e) => {
    const b = e.target.closest('.emoji-btn');
    if (!b) return;
    const to = step(body, b, e.key);
    if (to === 'search') input.focus();
    else if (to) go(to);
    else return;
    e.preventDefault();
  });
  input.addEventListener('input', draw);
  input.addEventListener('keydown', (e) => {
    const first = body.querySelector('.emoji-btn');
    if (e.key === 'ArrowDown' && first) { e.preventDefault(); go(first); }
    if (e.key === 'Enter' && !e.isComposing) { e.preventDefault(); if (first && input.value.trim()) choose(first.dataset.c); }
  });
  tones.addEventListener('change', () => { setTone(Number(tones.value)); draw(); });
  // Tab out of it (to the page) closes it, as a click outside does.
  el.addEventListener('focusout', (e) => { if (e.relatedTarget && !el.contains(e.relatedTarget) && open === mine) closePicker(false); });
  el.addEventListener('keydown', (e) => {
    if (e.key !== 'Escape') return;
    e.preventDefault();
    e.stopPropagation();
    closePicker();
  });
}

// step is where a key moves from emoji b: the arrows along the grid's rows and columns (across
// categories), Home and End to the first and last; ↑ from the first row is the search field.
function step(body, b, key) {
  const all = [...body.querySelectorAll('.emoji-btn')];
  const grids = [...body.querySelectorAll('.emoji-grid')];
  const grid = b.parentElement;
  const items = [...grid.children];
  const i = items.indexOf(b), g = grids.indexOf(grid), col = i % COLS;
  switch (key) {
    case 'ArrowRight': return all[all.indexOf(b) + 1] || null;
    case 'ArrowLeft': return all[all.indexOf(b) - 1] || null;
    case 'Home': return all[0];
    case 'End': return all[all.length - 1];
    case 'ArrowDown': {
      if (i + COLS < items.length) return items[i + COLS];
      if (Math.floor(i / COLS) < Math.floor((items.length - 1) / COLS)) return items[items.length - 1];
      const next = grids[g + 1];
      return next ? next.children[Math.min(col, next.children.length - 1)] : null;
    }
    case 'ArrowUp': {
      if (i >= COLS) return items[i - COLS];
      const prev = grids[g - 1];
      if (!prev) return 'search';
      const n = prev.children.length;
      return prev.children[Math.min(Math.floor((n - 1) / COLS) * COLS + col, n - 1)];
    }
    default: return null;
  }
}

// place puts the picker beside its button, above it when there is room, inside the window.
function place(el, anchor) {
  // A message's toolbar pressed by script or hidden again: beside the message instead.
  let r = anchor.getBoundingClientRect();
  if (!r.width) r = (anchor.closest('.msg') || document.body).getBoundingClientRect();
  const w = el.offsetWidth, ht = el.offsetHeight;
  el.style.left = `${Math.max(8, Math.min(r.right - w, innerWidth - w - 8))}px`;
  el.style.top = `${r.top - ht - 6 >= 8 ? r.top - ht - 6 : Math.max(8, Math.min(r.bottom + 6, innerHeight - ht - 8))}px`;
}
