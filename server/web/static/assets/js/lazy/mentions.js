// @ts-check
// lazy/mentions.js, fetched when first used: finding what is new (issue 30). "Mentions" at the
// top of the sidebar opens a panel of the messages that mention the reader (@handle, @here,
// @channel, @everyone) across the workspace's places they read, from the server's index of
// mentions (GET /api/workspaces/{id}/mentions), newest first; a click opens the message.
// "Mark all read" (workspace menu) marks every unread channel and conversation read up to its
// newest message. Rows that mention the reader are highlighted by views/row.js.
import { h, replace, displayName, fmt } from '../dom.js';
import * as api from '../api.js';
import { state } from '../store.js';
import * as actions from '../actions.js';
import { registerPanel } from '../views/registry.js';

async function renderMentions(body, cursor, acc = []) {
  if (!acc.length) replace(body, h('p', { class: 'muted pad' }, 'Looking for mentions…'));
  try {
    const res = await api.get(`/api/workspaces/${state.wsId}/mentions${api.q({ limit: 50, cursor })}`);
    const found = acc.concat(res.messages || []);
    replace(body,
      found.length ? h('ul', { class: 'results mentions', role: 'list' }, ...found.map(item)) : h('p', { class: 'muted pad' }, 'No one has mentioned you yet.'),
      res.next_cursor ? h('button', { class: 'btn wide', type: 'button', onclick: () => renderMentions(body, res.next_cursor, found) }, 'Older mentions') : null);
  } catch (e) { replace(body, h('p', { class: 'error pad', role: 'alert' }, e.message)); }
}

/** @param {any} m a message */
function item(m) {
  const where = m.channel_id ? `#${(state.channels.get(m.channel_id) || {}).name || 'channel'}` : 'direct message';
  const text = m.body.length > 280 ? `${m.body.slice(0, 280)}…` : m.body;
  return h('li', null, h('button', { class: 'result', type: 'button', onclick: () => actions.jumpTo(m.id).catch((e) => actions.toast(e.message)) },
    h('span', { class: 'result-head' }, h('span', { class: 'author' }, displayName(m.author)),
      h('span', { class: 'muted' }, ` in ${where}${m.parent_message_id ? ' (thread)' : ''} · ${fmt.day(new Date(m.created_at))} ${fmt.time(new Date(m.created_at))}`)),
    h('span', { class: 'snippet' }, text)));
}

registerPanel('mentions', { title: 'Mentions', render(body, panel, { fresh }) { if (fresh) renderMentions(body); } });

// markAllRead records every unread place as read up to its newest message.
export async function markAllRead() {
  const places = [...state.channels.values(), ...state.dms.values()].filter((p) => p.last_seq && (p.unread_count > 0 || (p.last_read_seq || 0) < p.last_seq));
  await Promise.all(places.map((p) => {
    const path = state.dms.has(p.id) ? `/api/dms/${p.id}/read` : `/api/channels/${p.id}/read`;
    return api.post(path, { seq: p.last_seq }).then(() => actions.readUpTo(p, Math.max(p.last_read_seq || 0, p.last_seq)));
  }));
  actions.toast(places.length ? `Marked ${places.length} ${places.length === 1 ? 'place' : 'places'} read` : 'Nothing was unread');
}

