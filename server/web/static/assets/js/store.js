// @ts-check
// store.js holds the client's one state, fed by API answers and by the event stream through
// reducers added with on(). Views change it through exported functions and subscribe to topics;
// changes are flushed to them at most once per animation frame, however many events arrive.

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
  typing: new Map(), // place id → Map(user id → expiry ms), see live.js
  progress: new Map(), // place id → Map(bot id → { turn, lines, until }), see live.js
  mentions: new Map(), // place id → mentions seen live while unread
  threadsUnread: 0, // one's threads with unread replies (server count)
  conn: 'idle', // idle | connecting | open | reconnecting
  editing: null, // id of the message being edited
  editDraft: null, // { id, body }: the edit box's text, kept while its row is drawn again
  quote: null, // message quoted by the composer
  toast: null,
  memberCount: null, // people in the workspace, from the directory's first page
};

// topics: every name touch() takes; the last ones are a view's own (its redraw, a wake-up).
export const topics = /** @type {const} */ (['phase', 'conn', 'sidebar', 'header', 'view', 'messages', 'thread', 'panel', 'pins',
  'channel', 'channel-members', 'typing', 'progress', 'toast', 'quote', 'profile', 'notify', 'standing', 'moderation', 'guests',
  'invite', 'moderation-view', 'moderation-clock', 'guests-view', 'invites-view', 'join-view', 'archived-view', 'private-view', 'presence',
  'browse', 'channel-about', 'add-members']);

const subscribers = [], dirty = new Set();
let scheduled = false;

// subscribe calls fn(topics) after each flush that touched any topic.
/** @param {(topics: Set<Topic>) => void} fn */
export function subscribe(fn) { subscribers.push(fn); }

// touch marks topics changed; one flush per frame follows. An unknown name throws.
/** @param {...Topic} names */
export function touch(...names) {
  for (const t of names) {
    if (!topics.includes(t)) throw new Error(`unknown topic ${t}`);
    dirty.add(t);
  }
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

// What a view may change, each with the topics it changes.
let toastTimer;
export function toast(text) {
  state.toast = text;
  touch('toast');
  clearTimeout(toastTimer);
  toastTimer = setTimeout(() => { state.toast = null; touch('toast'); }, 5000);
}
export function setEditing(id) { state.editing = id; touch('messages', 'thread'); }
export function setEditDraft(id, body) { state.editDraft = { id, body }; }
export function setQuote(m) { state.quote = m; touch('quote'); }
// setMe merges what the server said about the signed-in person (null: nobody).
export function setMe(user) { state.me = user && { ...state.me, ...user }; }
export function setWorkspaces(list) { state.workspaces = list; touch('sidebar'); }

export const placeOf = (m) => m.channel_id || m.direct_conversation_id;
export const seqOf = (m) => (m.channel_seq === null || m.channel_seq === undefined ? Infinity : m.channel_seq);

// conv and thread are the window of a place or a thread, made when first asked for.
export function conv(placeId) {
  if (!state.convs.has(placeId)) state.convs.set(placeId, { ids: [], pending: [], hasOlder: false, hasNewer: false, loaded: false, focus: null, firstUnreadSeq: null });
  return state.convs.get(placeId);
}
export function thread(rootId) {
  if (!state.threads.has(rootId)) state.threads.set(rootId, { ids: [], pending: [], hasOlder: false, loaded: false });
  return state.threads.get(rootId);
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

// mentionsMe is the server's rule (persist.Addresses; docs/messages.md, "Mentions"): an @ not
// after a handle character, then the reader's handle, here, channel or everyone, then no handle
// character. @here counts: a page that shows it is online. broadcasts false: a channel left.
export function mentionsMe(body, broadcasts = true) {
  const me = state.me;
  const names = broadcasts ? ['here', 'channel', 'everyone'] : [];
  if (me && me.handle) names.push(me.handle.replace(/[^\w-]/g, ''));
  // Most messages name nobody: no expression is built for them (a burst's rows, each frame).
  if (!me || !body || !names.length || !body.includes('@')) return false;
  return new RegExp(`(?<![\\w@-])@(${names.join('|')})(?![\\w@-])`, 'i').test(body);
}

export const isViewing = (placeId) => state.view && state.view.id === placeId && document.visibilityState === 'visible';

function bumpPlace(m) {
  const placeId = placeOf(m);
  const ch = state.channels.get(placeId) || state.dms.get(placeId);
  if (!ch) return; // a place the sidebar does not list yet: actions.js loads it
  // The listing already counted what it reported (the socket replays from a cursor taken
  // before it was read): only newer messages count.
  if (m.channel_seq && m.channel_seq <= (ch.last_seq || 0)) return;
  if (m.channel_seq) ch.last_seq = m.channel_seq;
  if (ch.members) ch.last_activity_at = m.created_at;
  // One's own message, or one read on screen, is not unread; but the server is told only by
  // markRead, so last_read_seq (what it was told) stays until then.
  if (m.author_id === (state.me && state.me.id) || isViewing(placeId)) return;
  ch.unread_count = (ch.unread_count || 0) + 1;
  if (badged(m, ch)) state.mentions.set(placeId, (state.mentions.get(placeId) || 0) + 1);
}

// badged: 1 when m counts on its place's badge (mention_count: persist.mentionCount's rule), else 0.
export const badged = (m, ch) => +(!m.deleted_at && !!(ch.members || mentionsMe(m.body, ch.joined !== false)));

/** @type {Record<string, Reducer>} */ const core = {
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
    const m = ev.payload && ev.payload.message;
    // ev.was: what it replaced, for lazy/badges.js.
    if (m) { ev.was = state.messages.get(m.id); upsertMessage(m); }
    return ['messages', 'thread', 'panel'];
  },
  'message.deleted'(ev) { return core['message.updated'](ev); },
  'reaction.added'(ev) { return react(ev, true); },
  'reaction.removed'(ev) { return react(ev, false); },
  'pin.added'() { return ['pins']; },
  'pin.removed'() { return ['pins']; },
  'channel.created'(ev) { return core['channel.updated'](ev); },
  'channel.updated'(ev) {
    const c = ev.payload && ev.payload.channel;
    if (!c) return [];
    const old = state.channels.get(c.id) || {};
    state.channels.set(c.id, { ...old, ...c, unread_count: old.unread_count || 0, last_read_seq: old.last_read_seq || 0 });
    return ['sidebar', 'header', 'channel'];
  },
  // A private channel's membership: the person added learns of the channel, the person removed
  // loses it at once (panels.js moves their page off it); members redraw the list.
  'channel.member_added'(ev) {
    const p = ev.payload || {};
    if (state.me && p.user_id === state.me.id && p.channel && !state.channels.has(p.channel.id)) {
      state.channels.set(p.channel.id, { ...p.channel, unread_count: 0, last_read_seq: 0 });
    }
    return ['sidebar', 'channel-members'];
  },
  'channel.member_removed'() { return ['sidebar', 'channel-members']; },
  'workspace.updated'(ev) {
    const w = ev.payload && ev.payload.workspace;
    if (w) state.workspaces = state.workspaces.map((x) => (x.id === w.id ? { ...x, ...w } : x));
    return ['sidebar'];
  },
};

function setThreadState(rootId, ts) {
  const root = state.messages.get(rootId);
  if (root && ts) state.messages.set(rootId, { ...root, thread_state: ts });
}

/** @returns {Topic[]} */
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

const reducers = new Map();

// on adds fn(ev), which changes state and returns the topics it changed, to the reducers of
// type; they run in the order added, the store's own first, and must be idempotent.
/** @param {string} type @param {Reducer} fn */
export function on(type, fn) {
  const list = reducers.get(type);
  if (list) list.push(fn); else reducers.set(type, [fn]);
}
for (const [type, fn] of Object.entries(core)) on(type, fn);

// apply runs the reducers of one event; a failing one must not stop the stream or the others.
export function apply(ev) {
  for (const fn of reducers.get(ev.type) || []) {
    try {
      const changed = fn(ev);
      if (changed && changed.length) touch(...changed);
    } catch (e) { console.error(e); }
  }
}
