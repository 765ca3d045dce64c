// @ts-check
// views/msgkeys.js: the keyboard in a list of messages (the channel's and the thread panel's).
// One message per list is in the Tab order (a roving tabindex: the one last focused, else the
// newest), so Tab crosses a list in one step instead of one per message and button. On a focused
// message: ↑/↓ move to the previous/next one, Home/End to the first/last drawn, Enter or r opens
// its thread (in the thread panel: the reply box), e edits it when it is one's own, Esc goes back
// to the composer. On the list itself, ↑/↓ enter it at the current message.
import { state, setEditing } from '../store.js';
import * as actions from '../actions.js';

const current = new WeakMap(); // list element → id of its message in the Tab order
let focused = null; // the message that had the keyboard, to give it back when it is redrawn

const lists = '.list, .thread-list';
const composerOf = (list) => document.querySelector(list.classList.contains('thread-list') ? '.thread-composer .compose-box' : 'form.composer .compose-box');
const rowsOf = (list) => [...list.querySelectorAll('.msg[data-id]')];

function tabbable(row, on) {
  if (row.dataset.rove === (on ? '1' : '0')) return;
  row.dataset.rove = on ? '1' : '0';
  row.tabIndex = on ? 0 : -1;
  // A message's own controls (its author's name, toolbar, reactions, links) are reached by Tab
  // from the message.
  for (const el of row.querySelectorAll('button, a[href], summary, [role=button][data-card]')) {
    if (!on) el.tabIndex = -1;
    else if (el.matches('[data-card]')) el.tabIndex = 0;
    else el.removeAttribute('tabindex');
  }
}

// rove keeps one message of list in the Tab order; the list's view calls it after each draw.
export function rove(list) {
  const rows = rowsOf(list);
  if (!rows.length) return;
  const want = current.get(list);
  const cur = rows.find((r) => r.dataset.id === want) || rows[rows.length - 1];
  for (const r of rows) tabbable(r, r === cur);
  // A redraw replaced the focused message (a reaction, an edit arrived): keep the keyboard there.
  if (focused && !focused.isConnected && cur.dataset.id === focused.dataset.id && (document.activeElement === document.body || !document.activeElement)) {
    focused = cur;
    cur.focus({ preventScroll: true });
  }
}

function select(list, row, scroll = true) {
  current.set(list, row.dataset.id);
  rove(list);
  row.focus({ preventScroll: true });
  if (scroll) row.scrollIntoView({ block: 'nearest' });
}

document.addEventListener('focusin', (e) => {
  const t = /** @type {HTMLElement} */ (e.target);
  const row = t.closest && t.closest('.msg[data-id]');
  const list = row && row.closest(lists);
  focused = list && row === t ? row : null;
  if (!list) return;
  if (current.get(list) !== row.dataset.id) { current.set(list, row.dataset.id); rove(list); }
});

document.addEventListener('keydown', (e) => {
  if (e.altKey || e.ctrlKey || e.metaKey || e.isComposing) return;
  const t = /** @type {HTMLElement} */ (e.target);
  // The list itself (a click on its background, or its focus from a test or a screen reader).
  if (t.matches && t.matches(lists) && (e.key === 'ArrowUp' || e.key === 'ArrowDown')) {
    const rows = rowsOf(t);
    const row = rows.find((r) => r.dataset.id === current.get(t)) || rows[rows.length - 1];
    if (row) { e.preventDefault(); select(t, row); }
    return;
  }
  if (!t.classList || !t.classList.contains('msg') || !t.dataset.id) return;
  const list = t.closest(lists);
  if (!list) return;
  const rows = rowsOf(list);
  const i = rows.indexOf(t);
  const m = state.messages.get(t.dataset.id);
  const inThread = list.classList.contains('thread-list');
  let used = true;
  if (e.key === 'ArrowDown' || e.key === 'ArrowUp') {
    const next = rows[i + (e.key === 'ArrowDown' ? 1 : -1)];
    if (next) select(list, next);
  } else if (e.key === 'Home' || e.key === 'End') {
    select(list, e.key === 'Home' ? rows[0] : rows[rows.length - 1]);
  } else if ((e.key === 'Enter' || e.key === 'r') && m && !m.pending) {
    if (inThread) composerOf(list)?.focus();
    else actions.openPanel({ kind: 'thread', rootId: m.thread_root_id || m.id });
  } else if (e.key === 'e' && m && !m.pending && !m.deleted_at && state.me && m.author_id === state.me.id) {
    setEditing(m.id);
  } else if (e.key === 'Escape') {
    // Back to writing; the next Esc, in the composer, closes the panel as usual.
    composerOf(list)?.focus();
    e.stopPropagation();
  } else {
    used = false;
  }
  if (used) e.preventDefault();
}, true);
