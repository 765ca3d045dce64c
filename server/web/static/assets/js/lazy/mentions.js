// @ts-check
// lazy/mentions.js, fetched when first used: finding what is new (issue 30). "Mentions" at the
// top of the sidebar opens a panel of the latest messages that mention the reader (@handle, @channel, @everyone) across the
// workspace's places they read, found by the search API, newest first; a click opens the message.
// "Mark all read" (workspace menu) marks every unread channel and conversation read up to its
// newest message. Rows that mention the reader are highlighted by views/row.js.
import { h, replace, displayName, fmt } from '../dom.js';
import * as api from '../api.js';
import { state } from '../store.js';
import * as actions from '../actions.js';
import { registerPanel } from '../views/registry.js';

// mentionPattern matches what the server and the store count as a mention of the reader. @here
// is one too, but search cannot find it: "here" is an English stop word.
function mentionPattern() {
  const names = ['channel', 'everyone', 'here'];
  if (state.me && state.me.handle) names.unshift(state.me.handle.replace(/[^\w-]/g, ''));
  return { re: new RegExp(`(^|[^\\w])@(${names.join('|')})\\b`, 'i'), query: names.filter((n) => n !== 'here').join(' or ') };
}

async function renderMentions(body, cursor, acc = []) {
  const { re, query } = mentionPattern();
  if (!acc.length) replace(body, h('p', { class: 'muted pad' }, 'Looking for mentions…'));
  try {
    const res = await api.get(`/api/search${api.q({ workspace_id: state.wsId, q: query, sort: 'newest', limit: 50, cursor })}`);
    const found = acc.concat((res.results || []).filter((r) => r.author_id !== state.me.id && re.test(r.snippet || '')));
    replace(body,
      found.length ? h('ul', { class: 'results mentions', role: 'list' }, ...found.map(item)) : h('p', { class: 'muted pad' }, 'No one has mentioned you yet.'),
      res.next_cursor ? h('button', { class: 'btn wide', type: 'button', onclick: () => renderMentions(body, res.next_cursor, found) }, 'Older mentions') : null);
  } catch (e) { replace(body, h('p', { class: 'error pad', role: 'alert' }, e.message)); }
}

function item(r) {
  const where = r.channel_id ? `#${(state.channels.get(r.channel_id) || {}).name || 'channel'}` : 'direct message';
  return h('li', null, h('button', { class: 'result', type: 'button', onclick: () => actions.jumpTo(r.id).catch((e) => actions.toast(e.message)) },
    h('span', { class: 'result-head' }, h('span', { class: 'author' }, displayName(r.author)),
      h('span', { class: 'muted' }, ` in ${where}${r.parent_message_id ? ' (thread)' : ''} · ${fmt.day(new Date(r.created_at))} ${fmt.time(new Date(r.created_at))}`)),
    h('span', { class: 'snippet' }, r.snippet)));
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

