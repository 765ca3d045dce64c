// views/progress.js: agents at work in the open place, each a collapsible block at the bottom
// of the channel; a person's collapsing of a block survives its updates.
import { h, replace, avatar, displayName } from '../dom.js';
import { state } from '../store.js';
import { live } from '../progress.js';

const collapsed = new Set(); // bot id + turn the reader closed

let shown = '';

export function renderProgress(el) {
  const blocks = state.view ? live(state.view.id) : [];
  // Redraw only on a change: a block rebuilt under the pointer would swallow a click on it.
  const key = JSON.stringify([state.view && state.view.id, blocks.map(([id, b]) => [id, b.turn, b.lines, displayName(state.users.get(id))])]);
  if (key === shown) return;
  shown = key;
  el.hidden = !blocks.length;
  replace(el, ...blocks.map(([botId, b]) => {
    const key = `${botId}/${b.turn}`;
    const bot = state.users.get(botId);
    const last = b.lines[b.lines.length - 1] || 'Working…';
    const d = h('details', { class: 'agent-block', open: !collapsed.has(key), dataset: { bot: botId } },
      h('summary', null, avatar(bot || { id: botId, display_name: 'Agent' }, 'xs'),
        h('strong', null, bot ? displayName(bot) : 'An agent'), h('span', { class: 'spinner', 'aria-hidden': 'true' }),
        h('span', { class: 'progress-last' }, last)),
      h('ol', { class: 'progress-lines' }, ...b.lines.map((l) => h('li', null, l))));
    d.addEventListener('toggle', () => { if (d.open) collapsed.delete(key); else collapsed.add(key); });
    return d;
  }));
}
