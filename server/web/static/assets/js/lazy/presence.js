// @ts-check
// lazy/presence.js keeps who is online in the open workspace (docs/realtime.md, "Presence"):
// the server's online set, loaded the first time a card or the people panel needs it, then the
// socket's presence.changed events (those without a channel or conversation: the server's own,
// one person's change or several), each person's latest version winning. After the socket
// reconnects, events may have been missed, so the set is loaded again. Views redraw on the store
// topic 'presence'.
import * as api from '../api.js';
import { h, avatar, pdot } from '../dom.js';
import { state, on, subscribe, touch } from '../store.js';

let people = new Map(); // user id → { online, version }
let loadedFor = null;
let loading = null;

// ensure loads the open workspace's online set once (again after a reconnect or a switch).
export function ensure() {
  if (loadedFor === state.wsId && loading) return loading;
  const ws = state.wsId;
  if (loadedFor !== ws) people = new Map();
  loadedFor = ws;
  loading = api.get(`/api/workspaces/${ws}/presence`).then((res) => {
    if (loadedFor !== ws) return;
    const next = new Map();
    for (const p of res.presence || []) next.set(p.user_id, { online: true, version: p.version });
    // A change that arrived while the set was on its way, newer than what it says, stands.
    for (const [id, p] of people) if (p.version > ((next.get(id) || {}).version || 0)) next.set(id, p);
    people = next;
    touch('presence');
  }, (e) => { loading = null; throw e; });
  return loading;
}

// styles adds the people's style sheet (cards, dots, the panel's lists) the first time one
// shows; the promise settles once it applies (a card is measured to be placed).
let sheet = null;
export function styles() {
  if (!sheet) {
    sheet = new Promise((resolve) => {
      document.head.appendChild(h('link', { rel: 'stylesheet', href: '/assets/people.css', onload: resolve, onerror: resolve }));
    });
  }
  return sheet;
}

// load is what dom.js's pdot asks for: the styles (once) and the workspace's online set.
export const load = () => { styles(); return ensure(); };

export const isOnline = (userId) => !!(people.get(userId) || {}).online;

// dot is a person's presence marker: green when online, with the word for screen readers.
export const dot = (userId) => mark(one(userId));
const one = (userId) => (isOnline(userId) ? { on: true, label: 'Online' } : { on: false, label: 'Offline' });
const mark = ({ on, label }) => h('span', { class: `presence-dot${on ? ' online' : ''}`, role: 'img', 'aria-label': label, title: label });

// others are the people of a conversation but oneself.
const others = (d) => { const me = state.me && state.me.id; return (d.members || []).filter((u) => u.id !== me); };

// other is the one other person of a conversation (oneself in a note to self; null in a group).
export function other(d) {
  const them = others(d);
  return them.length > 1 ? null : them[0] || state.me;
}

// seen is a conversation's presence, { on, label }: its other person's; a group's is on when any
// of the others is online, its label saying how many are ("2 of 3 online"): before writing to
// several people a team asks whether anyone is there (Slack shows a group's member count).
export function seen(d) {
  const o = other(d);
  if (o) return one(o.id);
  const them = others(d), n = them.filter((u) => isOnline(u.id)).length;
  return { on: n > 0, label: n ? `${n} of ${them.length} online` : 'Nobody online' };
}
// withPdot is a list's small picture of a person with their dot (dom.js's pdot), opening their card.
export const withPdot = (u) => h('span', { class: 'avatar-wrap', dataset: { card: u.id } }, avatar(u, 'sm'), pdot([u.id]));
// withDot puts a conversation's dot on its picture (the sidebar, the quick switcher).
export const withDot = (pic, d) => h('span', { class: 'avatar-wrap' }, pic, mark(seen(d)));

// Dots are a style, not a part of what shows them: a message's picture sits in `.who-<author
// id>` (views/row.js), a list's or a header's dot is dom.js's pdot, and this one sheet sets
// --on and --off on the online people's, which people.css turns into a dot and its word; so a
// presence change restyles and redraws no row.
let online = null;
subscribe((topics) => {
  if (!topics.has('presence')) return;
  if (!online) document.adoptedStyleSheets = [...document.adoptedStyleSheets, online = new CSSStyleSheet()];
  const on = [...people].filter(([, p]) => p.online).map(([id]) => `.who-${CSS.escape(id)}`);
  online.replaceSync(on.length ? `${on.join()}{--on:"";--off:none}` : '');
});

// One person's change, or several people's in one event ({changes: [...]}: the server sends
// those one flush of its changed together, so a sign-in storm is a few frames, not one a person).
on('presence.changed', (ev) => {
  if (ev.channel_id || ev.direct_conversation_id || ev.workspace_id !== loadedFor) return [];
  const p = ev.payload || {};
  let changed = false;
  for (const c of Array.isArray(p.changes) ? p.changes : [p]) {
    if (!c || !c.user_id || typeof c.version !== 'number') continue;
    const known = people.get(c.user_id);
    if (known && known.version >= c.version) continue;
    people.set(c.user_id, { online: !!c.online, version: c.version });
    changed = true;
  }
  return changed ? ['presence'] : [];
});

let conn = state.conn;
subscribe(() => {
  if (state.conn === conn) return;
  const back = state.conn === 'open' && conn !== 'open';
  conn = state.conn;
  if (back && loadedFor) { loading = null; people = new Map(); ensure().catch(() => {}); }
});
