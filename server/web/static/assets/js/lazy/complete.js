// @ts-check
// lazy/complete.js completes what is being typed in a composer (the channel's and the thread's):
// `@` and a name or handle offers people (those seen, and the member directory asked as one
// types), `:` and two letters offers emoji by shortcode or name (lazy/emoji.js's table, fetched
// then), and a whole `:shortcode:` typed becomes its emoji. ↑/↓ move, Enter or Tab takes one (a
// person becomes `@handle `, an emoji its character), Esc closes the list and keeps the text. It listens
// on the document, before the composer does, so a key it uses never sends the message. features.js
// loads it on the first `@` or `:` typed in a composer, so a first visit does not wait for it.
import { h, replace, avatar, displayName } from '../dom.js';
import { state } from '../store.js';
import * as actions from '../actions.js';
import { load, search, remember, toned } from './emoji.js';
import { ensure, dot, styles } from './presence.js';

const LIMIT = 8;
// localeCompare's order, faster over the thousands of people a big workspace's page comes to know.
const byName = new Intl.Collator().compare;

let menu = null; // { box, el, kind, start, items, sel }
let seq = 0;
let table = null; // the emoji table, once loaded

// withTable runs then() now if the emoji table is here, else once it has come.
function withTable(then) {
  if (table) { then(); return; }
  load().then((t) => { table = t; then(); }, () => {});
}

// token is what is being completed: `@…` or `:…` just before the caret, after a space or the start.
function token(box) {
  const before = box.value.slice(0, box.selectionStart);
  const m = /(^|\s)([@:])([\p{L}\p{N}_+-]*)$/u.exec(before);
  if (!m) return null;
  return { kind: m[2], q: m[3].toLowerCase(), start: before.length - m[3].length - 1 };
}

function people(q) {
  const found = [];
  for (const u of state.users.values()) {
    if (!u.handle || (state.me && u.id === state.me.id)) continue;
    const name = displayName(u).toLowerCase();
    if (u.handle.toLowerCase().startsWith(q) || name.startsWith(q) || name.includes(` ${q}`)) found.push(u);
  }
  return found.sort((a, b) => byName(displayName(a), displayName(b))).slice(0, LIMIT)
    .map((u) => ({ text: `@${u.handle} `, label: displayName(u), extra: `@${u.handle}`, user: u }));
}

function emoji(q) {
  return search(table, q, LIMIT).map((e) => { const c = toned(e); return { text: `${c} `, label: c, extra: e.codes.length ? `:${e.codes[0]}:` : e.n }; });
}

// shortcode turns a `:name:` just typed (or followed by one space) into its emoji; a name the
// table does not know stays as typed.
function shortcode(box) {
  const before = box.value.slice(0, box.selectionStart);
  const m = /(^|\s):([a-z0-9_+-]+):(\s?)$/i.exec(before);
  if (!m) return false;
  const e = table && table.byCode.get(m[2].toLowerCase());
  if (!table) withTable(() => { if (shortcode(box)) update(box); });
  if (!e) return false;
  const c = toned(e), end = before.length - m[3].length;
  box.setRangeText(c, end - m[2].length - 2, end, 'end');
  box.setSelectionRange(box.selectionStart + m[3].length, box.selectionStart + m[3].length);
  remember(c);
  box.dispatchEvent(new Event('input', { bubbles: true }));
  return true;
}

function close() {
  if (!menu) return;
  menu.el.remove();
  menu.box.removeAttribute('aria-activedescendant');
  menu = null;
}

function draw(box, t, items) {
  if (!items.length) { close(); return; }
  if (!menu || menu.box !== box) {
    close();
    const el = h('ul', { class: 'complete-menu', id: 'complete-menu', role: 'listbox' });
    box.closest('.composer').prepend(el);
    menu = { box, el, sel: 0 };
  }
  Object.assign(menu, { kind: t.kind, start: t.start, items, sel: Math.min(menu.sel, items.length - 1) });
  menu.el.setAttribute('aria-label', t.kind === '@' ? 'People' : 'Emoji');
  replace(menu.el, ...items.map((it, i) => h('li', {
    class: `complete-item${i === menu.sel ? ' sel' : ''}`, role: 'option', id: `complete-${i}`, 'aria-selected': i === menu.sel ? 'true' : 'false',
    onmousedown: (e) => { e.preventDefault(); pick(i); },
  }, it.user ? h('span', { class: 'avatar-wrap' }, avatar(it.user, 'xs'), dot(it.user.id)) : null, h('span', { class: it.user ? 'complete-label' : 'complete-emoji' }, it.label),
  h('span', { class: 'muted' }, it.extra))));
  box.setAttribute('aria-activedescendant', `complete-${menu.sel}`);
}

let askTimer; // the directory is asked 150 ms after the last keystroke
let dotted = null;
export function update(box) {
  if (shortcode(box)) return;
  const t = token(box);
  if (!t || (t.kind === ':' && t.q.length < 2)) { close(); return; }
  if (t.kind === ':') {
    withTable(() => { const now = token(box); if (now && now.kind === ':' && now.q.length >= 2 && document.activeElement === box) draw(box, now, emoji(now.q)); });
    return;
  }
  draw(box, t, people(t.q));
  // Each person's presence dot: the online set and its styles, once (a redraw when they come).
  if (!dotted) dotted = Promise.all([ensure(), styles()]).then(() => { if (menu && menu.kind === '@') draw(menu.box, menu, menu.items); }, () => { dotted = null; });
  // The directory knows people this page has not seen yet; its answer redraws if still wanted.
  const mine = ++seq;
  clearTimeout(askTimer);
  askTimer = setTimeout(() => actions.members(t.q).then(() => {
    if (mine === seq && document.activeElement === box) { const now = token(box); if (now && now.kind === '@') draw(box, now, people(now.q)); }
  }).catch(() => {}), 150);
}

function pick(i) {
  const it = menu && menu.items[i];
  if (!it) return;
  const { box, start, kind } = menu;
  if (kind === ':') remember(it.label);
  const end = box.selectionStart;
  box.value = box.value.slice(0, start) + it.text + box.value.slice(end);
  box.setSelectionRange(start + it.text.length, start + it.text.length);
  close();
  box.focus();
  box.dispatchEvent(new Event('input', { bubbles: true }));
}

const isComposer = (el) => el && el.classList && el.classList.contains('compose-box');

document.addEventListener('input', (e) => { if (isComposer(e.target)) update(e.target); });
document.addEventListener('focusout', (e) => { if (menu && e.target === menu.box) close(); });
document.addEventListener('keydown', (e) => {
  if (!menu || e.target !== menu.box || e.isComposing) return;
  const n = menu.items.length;
  if (e.key === 'ArrowDown' || e.key === 'ArrowUp') {
    menu.sel = (menu.sel + (e.key === 'ArrowDown' ? 1 : n - 1)) % n;
    draw(menu.box, { kind: menu.kind, start: menu.start }, menu.items);
  } else if ((e.key === 'Enter' && !e.shiftKey) || e.key === 'Tab') {
    pick(menu.sel);
  } else if (e.key === 'Escape') {
    close();
  } else {
    return;
  }
  e.preventDefault();
  e.stopPropagation();
}, true);
