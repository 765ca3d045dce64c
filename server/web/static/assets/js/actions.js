// actions.js turns what a person does into API calls and their answers into store changes.
import * as api from './api.js';
import { state, touch, conv, thread, upsertMessage, rememberUser, apply, hooks } from './store.js';
import { Socket } from './socket.js';

const PAGE = 100; // the API's default page of root messages
let socket = null;

const placePath = (view) => (view.kind === 'dm' ? `/api/dms/${view.id}` : `/api/channels/${view.id}`);
export const viewOf = (placeId) => (state.dms.has(placeId) ? { kind: 'dm', id: placeId } : { kind: 'channel', id: placeId });

export function toast(text) {
  state.toast = text;
  touch('toast');
  clearTimeout(toast.t);
  toast.t = setTimeout(() => { state.toast = null; touch('toast'); }, 5000);
}

// openWorkspace loads a workspace and connects its socket from the tail cursor taken before the
// loads, so every change after it arrives over the socket (reducers ignore what they already know).
export async function openWorkspace(wsId, target, route) {
  socket?.close(); socket = null;
  state.wsId = wsId;
  state.channels = new Map();
  state.dms = new Map();
  state.convs = new Map();
  state.threads = new Map();
  state.messages = new Map();
  state.mentions = new Map();
  state.progress = new Map();
  state.memberCount = null;
  state.panel = null;
  state.view = null;
  touch('sidebar', 'header', 'messages', 'panel');
  localStorage.setItem('natter.workspace', wsId);
  // The tail cursor is taken before any message is read, so the socket opened from it misses
  // nothing; the listings do not depend on it and load at the same time. A channel opens without
  // waiting for the conversations; a conversation (or a place not found yet) waits for them.
  const dms = loadDMs().catch(() => {}); // without them the sidebar lacks conversations, no more
  const [tail] = await Promise.all([api.get(paths.tail(wsId)), loadChannels()]);
  const find = () => route && [...state.channels.values(), ...state.dms.values()].find((p) => p.route_id === route);
  const wanted = target || localStorage.getItem(`natter.place.${wsId}`);
  if ((route && !find()) || (wanted && !state.channels.has(wanted))) await dms;
  const routed = find();
  const first = target || (routed && routed.id) || pickDefaultPlace();
  if (first && !state.view) await openPlace(viewOf(first)); // a place picked while it loaded wins
  connect(tail.tail_cursor || '');
}

function connect(cursor) {
  const wsId = state.wsId;
  socket = new Socket(wsId, cursor, {
    onEvent: (ev) => { if (state.wsId === wsId) apply(ev); },
    onState: (s) => {
      state.conn = s;
      touch('conn');
      if (s === 'open') checkVersion();
    },
    onResync: () => resync(),
    onRevoked: () => { state.phase = 'signin'; touch('phase'); },
  });
}

// resync answers close code 4001: the log no longer reaches our cursor, so the view is rebuilt
// from the message endpoints and the socket reopened from a fresh tail.
export async function resync() {
  const view = state.view;
  await openWorkspace(state.wsId, view && view.id);
}

export async function checkVersion() {
  try {
    const res = await fetch('/web-version', { cache: 'no-store' });
    const v = (await res.json()).version;
    if (v && state.version && v !== state.version) { state.newVersion = true; touch('conn'); }
  } catch { /* the next reconnect checks again */ }
}

export function pickDefaultPlace() {
  const chans = [...state.channels.values()].filter((c) => !c.archived).sort((a, b) => a.name.localeCompare(b.name));
  const saved = localStorage.getItem(`natter.place.${state.wsId}`);
  if (saved && (state.channels.has(saved) || state.dms.has(saved))) return saved;
  const general = chans.find((c) => c.name === 'general');
  return (general || chans[0] || {}).id;
}

// paths of a workspace's first loads, shared with prefetchWorkspace.
const paths = {
  tail: (wsId) => `/api/realtime/events${api.q({ workspace_id: wsId, include_tail: true, limit: 1 })}`,
  channels: (wsId) => `/api/workspaces/${wsId}/channels`,
  dms: (wsId) => `/api/dms${api.q({ workspace_id: wsId })}`,
};

// prefetchWorkspace starts the first loads of the workspace used last, beside the sign-in
// check, so opening it costs one round trip less. Messages are not prefetched: they must be
// read after the tail cursor is taken.
export function prefetchWorkspace(wsId) {
  for (const p of Object.values(paths)) api.prefetch(p(wsId));
}

export async function loadChannels() {
  const res = await api.get(paths.channels(state.wsId));
  for (const c of res.channels || []) state.channels.set(c.id, c);
  touch('sidebar');
}

export async function loadDMs() {
  const res = await api.get(paths.dms(state.wsId));
  for (const d of res.conversations || []) {
    state.dms.set(d.id, d);
    (d.members || []).forEach(rememberUser);
  }
  touch('sidebar');
}

// A message in a conversation the sidebar does not list: list the conversations again, and
// count what is unread there as a mention, since it was written to this person.
hooks.unknownPlace = async (placeId, m) => {
  if (!m.direct_conversation_id || m.author_id === (state.me && state.me.id)) return;
  await loadDMs().catch(() => {});
  const d = state.dms.get(placeId);
  if (d && d.unread_count) { state.mentions.set(placeId, d.unread_count); touch('sidebar'); }
};

// openPlace shows a channel or conversation: at the first unread message, or at the bottom.
export async function openPlace(view, aroundSeq) {
  state.view = view;
  state.editing = null;
  localStorage.setItem(`natter.place.${state.wsId}`, view.id);
  if (state.panel && state.panel.kind === 'pins' && view.kind !== 'channel') state.panel = null;
  state.mentions.delete(view.id);
  const place = state.channels.get(view.id) || state.dms.get(view.id) || {};
  const c = conv(view.id);
  touch('view', 'sidebar', 'header', 'messages', 'panel');
  history.replaceState(null, '', routeOf(view));
  if (!c.loaded || aroundSeq) {
    const unread = place.unread_count > 0 && place.last_read_seq ? place.last_read_seq + 1 : null;
    c.firstUnreadSeq = unread;
    const around = aroundSeq || unread;
    await loadPage(view, around ? { around_seq: around } : { mode: 'latest' }, true);
    c.focus = aroundSeq ? { seq: aroundSeq, highlight: true } : unread ? { seq: unread } : null;
    touch('messages');
  }
  // A place left before its messages arrived was not read.
  if (state.view === view) markRead(view, 0);
}

function routeOf(view) {
  const ws = state.workspaces.find((w) => w.id === state.wsId);
  const place = state.channels.get(view.id) || state.dms.get(view.id);
  return ws && place ? `/${ws.route_id}/${place.route_id}` : '/';
}

// loadPage reads one page of root messages; reset replaces the window, otherwise the page joins
// it on the side it was asked for.
export async function loadPage(view, params, reset = false) {
  const c = conv(view.id);
  if (c.busy) return;
  c.busy = true;
  try {
    const res = await api.get(`${placePath(view)}/messages${api.q({ limit: PAGE, ...params })}`);
    const ids = (res.messages || []).map((m) => upsertMessage(m, true).id);
    if (reset) {
      c.ids = ids;
      c.hasOlder = res.has_older;
      c.hasNewer = res.has_newer;
    } else if (params.before_seq) {
      c.ids = ids.filter((id) => !c.ids.includes(id)).concat(c.ids);
      c.hasOlder = res.has_older;
    } else {
      c.ids = c.ids.concat(ids.filter((id) => !c.ids.includes(id)));
      c.hasNewer = res.has_newer;
    }
    c.loaded = true;
    trim(c, params.before_seq ? 'newer' : 'older');
  } finally {
    c.busy = false;
  }
  touch('messages');
}

// A window keeps at most 600 messages: past that, the side away from the reader is dropped and
// loaded again on the way back, so memory stays flat however far back someone scrolls.
const KEEP = 600;
function trim(c, side) {
  if (c.ids.length <= KEEP) return;
  const drop = c.ids.length - KEEP + 100;
  const gone = side === 'newer' ? c.ids.splice(c.ids.length - drop, drop) : c.ids.splice(0, drop);
  if (side === 'newer') c.hasNewer = true; else c.hasOlder = true;
  const inThreads = new Set([...state.threads.keys()]);
  for (const id of gone) if (!inThreads.has(id)) state.messages.delete(id);
}

export async function loadOlder(view) {
  const c = conv(view.id);
  if (!c.hasOlder || c.busy || !c.ids.length) return;
  // Older pages are the API's largest: someone scrolling back is usually going far.
  await loadPage(view, { before_seq: state.messages.get(c.ids[0]).channel_seq, limit: 200 });
}

export async function loadNewer(view) {
  const c = conv(view.id);
  if (!c.hasNewer || c.busy || !c.ids.length) return;
  await loadPage(view, { after_seq: state.messages.get(c.ids[c.ids.length - 1]).channel_seq });
}

export async function jumpToLatest(view) {
  const c = conv(view.id);
  c.focus = null;
  await loadPage(view, { mode: 'latest' }, true);
}

let readTimer = null, readView = null;
// markRead records the newest message seen: at once when a place opens, then at most every 500 ms
// while messages arrive. Leaving a place records its pending read first (Alt+↓ moves on fast).
export function markRead(view, delay = 500) {
  clearTimeout(readTimer);
  if (readView && readView.id !== view.id) recordRead(readView);
  readView = view;
  readTimer = setTimeout(() => { readView = null; recordRead(view); }, delay);
}

async function recordRead(view) {
  const c = conv(view.id);
  const place = state.channels.get(view.id) || state.dms.get(view.id);
  if (!place || c.hasNewer || !c.ids.length) return;
  const seq = state.messages.get(c.ids[c.ids.length - 1]).channel_seq;
  if (!seq || (place.last_read_seq >= seq && !place.unread_count)) return;
  place.last_read_seq = seq;
  place.unread_count = 0;
  state.mentions.delete(view.id);
  touch('sidebar');
  await api.post(`${placePath(view)}/read`, { seq }).catch(() => {});
}

export { send, retry, sendReply } from './send.js';
export * from './panels.js';

export async function editMessage(id, body) {
  const res = await api.patch(`/api/messages/${id}`, { body });
  upsertMessage(res.message, true);
  state.editing = null;
  touch('messages', 'thread');
}

export async function deleteMessage(id) {
  const res = await api.del(`/api/messages/${id}`);
  if (res.message) upsertMessage(res.message, true);
  touch('messages', 'thread');
}

export async function toggleReaction(id, emoji) {
  const m = state.messages.get(id);
  const mine = m && m.reactions.find((r) => r.emoji === emoji && r.reacted_by_me);
  const res = mine
    ? await api.del(`/api/messages/${id}/reactions/${encodeURIComponent(emoji)}`)
    : await api.post(`/api/messages/${id}/reactions`, { emoji });
  const cur = state.messages.get(id);
  if (cur) state.messages.set(id, { ...cur, reactions: res.reactions || [] });
  touch('messages', 'thread');
}

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
}

// typing tells the others at most every 3 seconds per place (lastTyping) that this person types.
const lastTyping = new Map();
export function typing() {
  const view = state.view, now = Date.now();
  if (!view || now - (lastTyping.get(view.id) || 0) < 3000) return;
  for (const [id, at] of lastTyping) if (now - at >= 3000) lastTyping.delete(id);
  lastTyping.set(view.id, now);
  const target = view.kind === 'dm' ? { direct_conversation_id: view.id } : { channel_id: view.id };
  api.post('/api/realtime/ephemeral', { workspace_id: state.wsId, type: 'typing.started', payload: {}, ...target }).catch(() => {});
}

export async function signOut() {
  socket?.close(); socket = null;
  await api.post('/api/auth/logout').catch(() => {});
  localStorage.setItem('natter.signedOut', '1');
  location.assign('/');
}
