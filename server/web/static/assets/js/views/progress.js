// @ts-check
// views/progress.js: agents at work in the open place, each a collapsible block under the
// message its progress names, or at the bottom of the channel when it names none (or one not on
// screen); a person's collapsing of a block survives its updates.
import { h, replace, avatar, displayName } from '../dom.js';
import { state, conv, touch } from '../store.js';
import { live, under } from '../live.js';
import { registerRowPart } from './registry.js';

const collapsed = new Set(); // bot id + message + turn the reader closed

let shown = '';

// shownUnder says whether a block's message is drawn where the reader is: in the open place's
// list, or in the thread open in the panel.
function shownUnder(b) {
  if (!b.messageId) return false;
  if (conv(state.view.id).ids.includes(b.messageId)) return true;
  const p = state.panel;
  const m = state.messages.get(b.messageId);
  return !!(p && p.kind === 'thread' && m && (m.id === p.rootId || m.thread_root_id === p.rootId));
}

export function renderProgress(el) {
  const { blocks, expired } = state.view ? live(state.view.id) : { blocks: [], expired: false };
  if (expired) touch('messages', 'thread');
  const bottom = blocks.filter((b) => !shownUnder(b));
  // Redraw only on a change: a block rebuilt under the pointer would swallow a click on it.
  const key = JSON.stringify([state.view && state.view.id, bottom.map((b) => [b.bot, b.messageId, b.turn, b.lines, displayName(state.users.get(b.bot))])]);
  if (key === shown) return;
  shown = key;
  el.hidden = !bottom.length;
  replace(el, ...bottom.map(block));
}

// block draws one agent's progress as a <details> the reader may collapse.
function block(b) {
  const key = `${b.bot}/${b.messageId}/${b.turn}`;
  const bot = state.users.get(b.bot);
  const last = b.lines[b.lines.length - 1] || 'Working…';
  const d = h('details', { class: 'agent-block', open: !collapsed.has(key), dataset: { bot: b.bot, message: b.messageId } },
    h('summary', null, avatar(bot || { id: b.bot, display_name: 'Agent' }, 'xs'),
      h('strong', null, bot ? displayName(bot) : 'An agent'), h('span', { class: 'spinner', 'aria-hidden': 'true' }),
      h('span', { class: 'progress-last' }, last)),
    h('ol', { class: 'progress-lines' }, ...b.lines.map((l) => h('li', null, l))));
  d.addEventListener('toggle', () => { if (d.open) collapsed.delete(key); else collapsed.add(key); });
  return d;
}

// Under a message: its agents' blocks, in a status region of their own.
registerRowPart({
  key: (m) => JSON.stringify(under(m).map((b) => [b.bot, b.turn, b.lines])),
  render(m) {
    const blocks = under(m);
    return blocks.length ? h('div', { class: 'agents under', role: 'status', 'aria-label': 'Agents at work on this message' }, ...blocks.map(block)) : null;
  },
});
