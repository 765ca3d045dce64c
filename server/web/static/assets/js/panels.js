// @ts-check
// panels.js: the calls behind the side panels and the sidebar's buttons: the panel and its
// thread, pins, search and jump-to-message, the member directory, direct conversations, new
// channels and the members of private channels.
import * as api from './api.js';
import { state, touch, thread, upsertMessage, rememberUser, placeOf, toast, on, mentionsMe } from './store.js';
import { openPlace, viewOf, pickDefaultPlace } from './reading.js';

export function openPanel(panel) {
  state.panel = panel;
  touch('panel');
  if (panel && panel.kind === 'thread') loadThread(panel.rootId);
}

export async function loadThread(rootId, older = false) {
  const t = thread(rootId);
  const params = older && t.ids.length ? { before_seq: state.messages.get(t.ids[0]).thread_seq, limit: 50 } : { latest: true, limit: 50 };
  const res = await api.get(`/api/messages/${rootId}/thread${api.q(params)}`);
  upsertMessage({ ...res.root, thread_state: res.thread_state }, true);
  const ids = (res.replies || []).map((m) => upsertMessage(m, true).id);
  t.ids = older ? ids.concat(t.ids.filter((id) => !ids.includes(id))) : ids;
  // The panel keeps at most 300 replies and trims toward 200.
  if (t.ids.length > 300) t.ids = older ? t.ids.slice(0, 200) : t.ids.slice(-200);
  t.hasOlder = res.has_older;
  t.loaded = true;
  touch('thread');
  if (!older && res.newest_seq) markThread(rootId, res.newest_seq);
}

// Threads (lazy/threads.js): the badge is the server's count of one's threads with unread replies.
export const countThreads = () => api.get(`/api/workspaces/${state.wsId}/threads?limit=1`).then((r) => { state.threadsUnread = r.unread_threads; touch('sidebar'); }, () => {});
const markThread = (id, seq) => api.post(`/api/messages/${id}/thread/read`, { seq }).then(countThreads, () => {});
let recount = 0;
on('thread.reply_created', ({ payload: { message: m, thread_state: ts } }) => {
  const me = state.me.id, p = state.panel || {};
  if (p.rootId === m.thread_root_id && !document.hidden) markThread(p.rootId, m.thread_seq);
  else if (m.author_id !== me && (mentionsMe(m.body) || state.messages.get(m.thread_root_id)?.author_id === me || ts.last_reply_author_ids.includes(me))) { clearTimeout(recount); recount = setTimeout(countThreads, 800); }
});


export async function togglePin(m) {
  try {
    await api.post(`/api/channels/${m.channel_id}/pins`, { message_id: m.id });
    toast('Pinned to the channel');
  } catch (e) {
    if (e.status !== 409) throw e;
    await api.del(`/api/channels/${m.channel_id}/pins/${m.id}`);
    toast('Unpinned');
  }
  touch('pins');
}

export async function loadPins(channelId) {
  const res = await api.get(`/api/channels/${channelId}/pins`);
  const list = res.messages || (res.pins || []).map((p) => p.message).filter(Boolean);
  return list.map((m) => upsertMessage(m, true));
}

export async function search(qtext, cursor) {
  return api.get(`/api/search${api.q({ workspace_id: state.wsId, q: qtext, limit: 30, cursor })}`);
}

// jumpTo opens the message's place around it; a reply opens its thread as well.
export async function jumpTo(messageId) {
  const m = upsertMessage((await api.get(`/api/messages/${messageId}`)).message, true);
  const root = m.parent_message_id ? upsertMessage((await api.get(`/api/messages/${m.thread_root_id}`)).message, true) : m;
  // Where the panel takes the whole window, it gives way to the message it opened.
  if (matchMedia('(max-width: 800px)').matches && !m.parent_message_id) openPanel(null);
  await openPlace(viewOf(placeOf(root)), root.channel_seq);
  if (m.parent_message_id) openPanel({ kind: 'thread', rootId: root.id });
}

export async function members(qtext, cursor) {
  const res = await api.get(`/api/workspaces/${state.wsId}/members${api.q({ q: qtext, cursor, limit: 100 })}`);
  for (const m of res.members || []) rememberUser(m.user);
  // A first page counts everyone: the header's count follows it.
  if (!qtext && !cursor && typeof res.total_count === 'number') { state.memberCount = res.total_count; touch('header'); }
  return res;
}

// countMembers reads the workspace's head count for the header; a failure leaves it out.
export const countMembers = () => members('', undefined).catch(() => { state.memberCount = undefined; });

export async function openDM(userIds) {
  const res = await api.post('/api/dms', { workspace_id: state.wsId, member_ids: userIds });
  const d = res.conversation;
  await api.post(`/api/dms/${d.id}/open`).catch(() => {});
  state.dms.set(d.id, { ...(state.dms.get(d.id) || {}), ...d });
  (d.members || []).forEach(rememberUser);
  await openPlace({ kind: 'dm', id: d.id });
}

export async function hideDM(id) {
  await api.del(`/api/dms/${id}`);
  state.dms.delete(id);
  if (state.view && state.view.id === id) {
    const next = pickDefaultPlace();
    if (next) await openPlace(viewOf(next));
  }
  touch('sidebar');
}

// sigilOf is the icon a channel goes by: a lock for a private one, a hash for the others.
export const sigilOf = (c) => (c && c.visibility === 'private' ? 'lock' : 'hash');

export async function createChannel(name, visibility = 'public') {
  const res = await api.post(`/api/workspaces/${state.wsId}/channels`, { name, visibility });
  state.channels.set(res.channel.id, { ...res.channel, unread_count: 0, last_read_seq: 0 });
  await openPlace({ kind: 'channel', id: res.channel.id });
}

// mergeChannel stores what an answer says of a channel, keeping the read state it does not carry.
export function mergeChannel(c) {
  const old = state.channels.get(c.id) || {};
  state.channels.set(c.id, { ...old, ...c, unread_count: old.unread_count || 0, last_read_seq: old.last_read_seq || 0 });
}

// updateChannel patches a channel; the answer (and later its event) updates the store.
export async function updateChannel(id, patch) {
  mergeChannel((await api.patch(`/api/channels/${id}`, patch)).channel);
  touch('sidebar', 'header', 'channel');
}

// channelMembers is a page of a private channel's members (its members only may read it).
export async function channelMembers(channelId, cursor) {
  const res = await api.get(`/api/channels/${channelId}/members${api.q({ cursor, limit: 100 })}`);
  for (const m of res.members || []) rememberUser(m.user);
  return res;
}

export async function addChannelMember(channelId, userId) {
  return api.post(`/api/channels/${channelId}/members`, { user_id: userId });
}

// removeChannelMember takes someone out of a private channel; taking oneself out is leaving, and
// the channel leaves the sidebar at once (its channel.member_removed says the same later).
export async function removeChannelMember(channelId, userId) {
  await api.del(`/api/channels/${channelId}/members/${userId}`);
  if (state.me && userId === state.me.id) await forgetChannel(channelId);
}

// Removed from a private channel: it leaves the sidebar, and the page moves off it.
on('channel.member_removed', (ev) => {
  const p = ev.payload || {};
  if (state.me && p.user_id === state.me.id) forgetChannel(p.channel_id || ev.channel_id).catch(() => {});
});

// This person joined, left, starred or muted a channel in another tab (channel.standing_updated,
// sent to their own sockets only): the channel as their list shows it.
on('channel.standing_updated', ({ payload: p }) => {
  const c = p && p.channel;
  if (!c || !state.me || p.user_id !== state.me.id) return [];
  if (c.visibility === 'private' && !c.joined) { forgetChannel(c.id).catch(() => {}); return []; }
  // Its last_seq may be older than the messages this page has counted (another path): keep ours.
  mergeChannel({ ...c, last_seq: (state.channels.get(c.id) || c).last_seq });
  return ['sidebar', 'header', 'channel-about'];
});

// forgetChannel drops a channel the person can no longer read, and moves off it if it is open.
export async function forgetChannel(channelId) {
  state.channels.delete(channelId);
  if (state.panel && (state.panel.channelId === channelId)) state.panel = null;
  touch('sidebar', 'panel');
  if (state.view && state.view.id === channelId) {
    const next = pickDefaultPlace();
    if (next) await openPlace(viewOf(next));
    else { state.view = null; touch('view', 'header', 'messages'); }
  }
}
