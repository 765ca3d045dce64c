import { applyProgress } from './progress.js';

// store.js holds the client's one state, fed by API answers and by the event stream through one
// reducer per event type. Views subscribe to topics; changes are flushed to them at most once
// per animation frame, however many events arrive.

export const state = {
  phase: 'boot', // boot | signin | app
  me: null,
  auth: { dev_auth: false, password: false, providers: [] },
  version: '',
  newVersion: false,
  workspaces: [],
  wsId: null,
  channels: new Map(), // id → channel (with last_seq, unread_count)
  dms: new Map(), // id → conversation
  users: new Map(), // id → public user
  messages: new Map(), // id → message, shared by the list and the thread panel
  convs: new Map(), // place id → { ids, pending, hasOlder, hasNewer, loaded, focus, firstUnreadSeq }
  threads: new Map(), // root id → { ids, pending, hasOlder, loaded }
  view: null, // { kind: 'channel' | 'dm', id }
  panel: null, // { kind: 'thread', rootId } | { kind: 'pins' | 'search' | 'members' | 'profile', ... }
  typing: new Map(), // place id → Map(user id → expiry ms)
  progress: new Map(), // place id → Map(bot id → { turn, lines, until }), see progress.js
  mentions: new Map(), // place id → mentions seen live while unread
  conn: 'idle', // idle | connecting | open | reconnecting
  editing: null, // id of the message being edited
  quote: null, // message quoted by the composer
  uploads: [], // { id, name, progress, error }
  toast: null,
  memberCount: null, // people in the workspace, from the directory's first page
};

const subscribers = [];
const dirty = new Set();
let scheduled = false;

// subscribe calls fn(topics) after each flush that touched any topic.
export function subscribe(fn) { subscribers.push(fn); }

// touch marks topics changed; one flush per frame follows.
export function touch(...topics) {
  for (const t of topics) dirty.add(t);
  if (scheduled) return;
  scheduled = true;
  // Hidden tabs get no animation frames; their state still has to move on.
  if (document.hidden) setTimeout(flush, 50);
  else requestAnimationFrame(flush);
}

// stats counts flushes and the slowest one (ms), for docs/performance.md; the browser's own
// long-task entries also include whatever else the machine was doing.
export const stats = { flushes: 0, slowestFlush: 0 };
globalThis.natterStats = stats;

function flush() {
  scheduled = false;
  const topics = new Set(dirty);
  dirty.clear();
  const t0 = performance.now();
  for (const fn of subscribers) fn(topics);
  stats.flushes++;
  stats.slowestFlush = Math.max(stats.slowestFlush, performance.now() - t0);
}

export const placeOf = (m) => m.channel_id || m.direct_conversation_id;
export const seqOf = (m) => (m.channel_seq === null || m.channel_seq === undefined ? Infinity : m.channel_seq);

export function conv(placeId) {
  let c = state.convs.get(placeId);
  if (!c) {
    c = { ids: [], pending: [], hasOlder: false, hasNewer: false, loaded: false, focus: null, firstUnreadSeq: null };
    state.convs.set(placeId, c);
  }
  return c;
}

export function thread(rootId) {
  let t = state.threads.get(rootId);
  if (!t) {
    t = { ids: [], pending: [], hasOlder: false, loaded: false };
    state.threads.set(rootId, t);
  }
  return t;
}

export function rememberUser(u) {
  if (u && u.id) state.users.set(u.id, { ...(state.users.get(u.id) || {}), ...u });
}

// upsertMessage stores m. Reaction counts always come from m; the viewer's own flags come from m
// only when mine is true (an answer to this viewer), since events carry the actor's flags.
export function upsertMessage(m, mine = false) {
  const old = state.messages.get(m.id);
  const next = { ...m, reactions: m.reactions || [] };
  if (!mine && old) {
    const flags = new Map((old.reactions || []).map((r) => [r.emoji, r.reacted_by_me]));
    next.reactions = next.reactions.map((r) => ({ ...r, reacted_by_me: !!flags.get(r.emoji) }));
  } else if (!mine) {
    next.reactions = next.reactions.map((r) => ({ ...r, reacted_by_me: false }));
  }
  if (old && !m.thread_state && old.thread_state) next.thread_state = old.thread_state;
  rememberUser(m.author);
  state.messages.set(m.id, next);
  return next;
}

// insertId places a root's id into a conversation window ordered by channel_seq, unless the
// window does not reach the newest messages (then the message is loaded when the reader gets there).
export function insertRoot(m) {
  const c = conv(placeOf(m));
  if (!c.loaded || c.ids.includes(m.id)) return false;
  const seq = seqOf(m);
  const last = c.ids.length ? seqOf(state.messages.get(c.ids[c.ids.length - 1])) : -Infinity;
  if (seq > last) {
    if (c.hasNewer) return false;
    c.ids.push(m.id);
    // A busy channel left open keeps its newest 600 messages; older ones are read again on
    // the way back up.
    if (c.ids.length > 700) {
      for (const id of c.ids.splice(0, c.ids.length - 600)) if (!state.threads.has(id)) state.messages.delete(id);
      c.hasOlder = true;
    }
  } else {
    let lo = 0;
    let hi = c.ids.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (seqOf(state.messages.get(c.ids[mid])) < seq) lo = mid + 1; else hi = mid;
    }
    c.ids.splice(lo, 0, m.id);
  }
  c.pending = c.pending.filter((p) => !m.nonce || p.nonce !== m.nonce);
  return true;
}

function insertReply(m) {
  const t = state.threads.get(m.thread_root_id);
  if (!t || !t.loaded || t.ids.includes(m.id)) return;
  t.ids.push(m.id);
  t.ids.sort((a, b) => (state.messages.get(a).thread_seq || 0) - (state.messages.get(b).thread_seq || 0));
  t.pending = t.pending.filter((p) => !m.nonce || p.nonce !== m.nonce);
}

export function mentionsMe(body) {
  const me = state.me;
  if (!me || !body) return false;
  const handle = me.handle && `@${me.handle}`.toLowerCase();
  const text = body.toLowerCase();
  return (handle && text.includes(handle)) || /(^|\s)@(here|channel|everyone)\b/.test(text);
}

function isViewing(placeId) {
  return state.view && state.view.id === placeId && document.visibilityState === 'visible';
}

// hooks.unknownPlace is called with a place the sidebar does not list yet (a conversation
// someone just started, or one this person had hidden); actions loads it. hooks.channelLost is
// called with a private channel this person was removed from; panels drops it.
export const hooks = { unknownPlace: () => {}, channelLost: () => {} };

function bumpPlace(m) {
  const placeId = placeOf(m);
  const ch = state.channels.get(placeId) || state.dms.get(placeId);
  if (!ch) { hooks.unknownPlace(placeId, m); return; }
  // The listing already counted what it reported (the socket replays from a cursor taken
  // before it was read): only newer messages count.
  if (m.channel_seq && m.channel_seq <= (ch.last_seq || 0)) return;
  if (m.channel_seq) ch.last_seq = m.channel_seq;
  if (ch.members) ch.last_activity_at = m.created_at;
  // One's own message, or one read on screen, is not unread; but the server is told only by
  // markRead, so last_read_seq (what it was told) stays until then.
  if (m.author_id === (state.me && state.me.id) || isViewing(placeId)) return;
  ch.unread_count = (ch.unread_count || 0) + 1;
  if (mentionsMe(m.body) || ch.members) state.mentions.set(placeId, (state.mentions.get(placeId) || 0) + 1);
}

const reducers = {
  'message.created'(ev) {
    const m = ev.payload && ev.payload.message;
    if (!m) return [];
    const known = state.messages.has(m.id);
    upsertMessage(m);
    // A message ends its author's typing there.
    const typers = state.typing.get(placeOf(m));
    if (typers) typers.delete(m.author_id);
    if (m.parent_message_id) { insertReply(m); return ['messages', 'thread']; }
    const inserted = insertRoot(m);
    if (!known) bumpPlace(m);
    if (inserted || !known) return ['messages', 'sidebar', 'typing'];
    return ['messages'];
  },
  'thread.reply_created'(ev) {
    const m = ev.payload && ev.payload.message;
    if (!m) return [];
    upsertMessage(m);
    insertReply(m);
    setThreadState(m.thread_root_id, ev.payload.thread_state);
    return ['messages', 'thread'];
  },
  'thread.state_updated'(ev) {
    setThreadState(ev.payload.root_message_id, ev.payload.thread_state);
    return ['messages', 'thread'];
  },
  'message.updated'(ev) {
    if (ev.payload && ev.payload.message) upsertMessage(ev.payload.message);
    return ['messages', 'thread', 'panel'];
  },
  'message.deleted'(ev) {
    return reducers['message.updated'](ev);
  },
  'reaction.added'(ev) { return react(ev, true); },
  'reaction.removed'(ev) { return react(ev, false); },
  'pin.added'() { return ['pins']; },
  'pin.removed'() { return ['pins']; },
  'channel.created'(ev) { return reducers['channel.updated'](ev); },
  'channel.updated'(ev) {
    const c = ev.payload && ev.payload.channel;
    if (!c) return [];
    const old = state.channels.get(c.id) || {};
    state.channels.set(c.id, { ...old, ...c, unread_count: old.unread_count || 0, last_read_seq: old.last_read_seq || 0 });
    return ['sidebar', 'header', 'channel'];
  },
  // A private channel's membership: the person added learns of the channel, the person removed
  // loses it at once (hooks.channelLost moves their page off it); members redraw the list.
  'channel.member_added'(ev) {
    const p = ev.payload || {};
    if (state.me && p.user_id === state.me.id && p.channel && !state.channels.has(p.channel.id)) {
      state.channels.set(p.channel.id, { ...p.channel, unread_count: 0, last_read_seq: 0 });
    }
    return ['sidebar', 'channel-members'];
  },
  'channel.member_removed'(ev) {
    const p = ev.payload || {};
    if (state.me && p.user_id === state.me.id) hooks.channelLost(p.channel_id || ev.channel_id);
    return ['sidebar', 'channel-members'];
  },
  'workspace.updated'(ev) {
    const w = ev.payload && ev.payload.workspace;
    if (w) state.workspaces = state.workspaces.map((x) => (x.id === w.id ? { ...x, ...w } : x));
    return ['sidebar'];
  },
  'typing.started'(ev) { return typing(ev, true); },
  'typing.stopped'(ev) { return typing(ev, false); },
  'agent.progress'(ev) { return applyProgress(ev); },
};

function setThreadState(rootId, ts) {
  const root = state.messages.get(rootId);
  if (root && ts) state.messages.set(rootId, { ...root, thread_state: ts });
}

function react(ev, added) {
  const p = ev.payload || {};
  const m = state.messages.get(p.message_id || ev.message_id);
  if (!m) return [];
  const mine = state.me && p.user_id === state.me.id;
  let found = false;
  let reactions = m.reactions.map((r) => {
    if (r.emoji !== p.emoji) return r;
    found = true;
    return { ...r, count: p.count, reacted_by_me: mine ? added : r.reacted_by_me };
  });
  if (!found && p.count > 0) reactions.push({ emoji: p.emoji, count: p.count, reacted_by_me: mine && added });
  reactions = reactions.filter((r) => r.count > 0);
  state.messages.set(m.id, { ...m, reactions });
  return ['messages', 'thread'];
}

function typing(ev, started) {
  const p = ev.payload || {};
  const placeId = ev.channel_id || ev.direct_conversation_id || p.channel_id || p.direct_conversation_id;
  const userId = p.user_id || ev.actor_id;
  if (!placeId || !userId || (state.me && userId === state.me.id)) return [];
  let m = state.typing.get(placeId);
  if (!m) { m = new Map(); state.typing.set(placeId, m); }
  if (started) m.set(userId, Date.now() + 6000); else m.delete(userId);
  return ['typing'];
}

const listeners = [];
// onEvent lets a feature module follow events the store has no reducer for (or act after one):
// fn(ev) runs after the event's reducer, for every event.
export function onEvent(fn) { listeners.push(fn); }

// apply runs the reducer of one event (unknown types change nothing), then the listeners; a
// failing listener must not stop the stream.
export function apply(ev) {
  const fn = reducers[ev.type];
  const topics = (fn && fn(ev)) || [];
  if (topics.length) touch(...topics);
  for (const l of listeners) {
    try { l(ev); } catch (e) { console.error(e); }
  }
}
