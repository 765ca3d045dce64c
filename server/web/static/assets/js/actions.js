// @ts-check
// actions.js turns what a person does into API calls and their answers into store changes.
import * as api from './api.js';
import { state, touch, upsertMessage, rememberUser, apply, on } from './store.js';
import { Socket } from './socket.js';
import { openPlace, viewOf } from './reading.js';
import { resendWaiting } from './send.js';
import { workspacePaths, openingPlace } from './boot.js';

let socket = null;

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
  const [tail] = await Promise.all([api.get(workspacePaths.tail(wsId)), loadChannels()]);
  if (target && !state.channels.has(target)) await dms;
  let first = target || openingPlace(wsId, route, state.channels, null);
  if (first === undefined) { await dms; first = openingPlace(wsId, route, state.channels, state.dms); }
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
      if (s === 'open') { checkVersion(); resendWaiting(); }
    },
    onResync: () => resync(),
    onRevoked: () => { state.phase = 'signin'; touch('phase'); },
  });
}

// The network came back: the socket may be dead without knowing it, so it reconnects at once
// (from its cursor: nothing lost, nothing twice), and what waited is sent.
window.addEventListener('online', () => { socket?.kick(); resendWaiting(); touch('conn'); });
window.addEventListener('offline', () => touch('conn'));

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

export async function loadChannels() {
  const res = await api.get(workspacePaths.channels(state.wsId));
  for (const c of res.channels || []) listed(state.channels, c);
  touch('sidebar');
}

export async function loadDMs() {
  const res = await api.get(workspacePaths.dms(state.wsId));
  for (const d of res.conversations || []) {
    listed(state.dms, d);
    (d.members || []).forEach(rememberUser);
  }
  touch('sidebar');
}

// listed keeps a place and its badge (mention_count: bumpPlace's rule); the open one has none.
function listed(places, p) {
  places.set(p.id, p);
  if (p.mention_count > 0 && !(state.view && state.view.id === p.id)) state.mentions.set(p.id, p.mention_count);
  else state.mentions.delete(p.id);
}

// A message in a conversation the sidebar does not list (one someone just started, or one this
// person had hidden): list the conversations again (with its badge).
on('message.created', (ev) => {
  const m = ev.payload && ev.payload.message;
  const placeId = m && m.direct_conversation_id;
  if (!placeId || state.dms.has(placeId) || m.author_id === (state.me && state.me.id)) return;
  loadDMs().catch(() => {});
});

// An edit or a deletion may move a badge (lazy/badges.js).
for (const t of ['message.updated', 'message.deleted']) on(t, (ev) => void import('./lazy/badges.js').then((b) => b.recount(ev)));

export { toast } from './store.js';
export { send, retry, sendReply, discard } from './send.js';
export * from './reading.js';
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
