// @ts-check
// lazy/threads.js, fetched when first opened: the Threads view (issue 30). "Threads" at the top
// of the sidebar lists the threads the reader is in (they started the root, replied, or were
// @mentioned in it), newest activity first, each with its root, its latest replies and how many
// replies are new; *Open thread* opens it in the thread panel, which marks it read. A reply that
// arrives in a listed thread, or in a thread of the reader's, redraws the list.
import { h, replace } from '../dom.js';
import * as api from '../api.js';
import { state, on, upsertMessage } from '../store.js';
import * as actions from '../actions.js';
import { registerPanel } from '../views/registry.js';
import { renderRow } from '../views/row.js';

/** @type {{ body: HTMLElement | null, shown: Set<string>, timer: number }} */
const view = { body: null, shown: new Set(), timer: 0 };

async function renderThreads(body, cursor, acc = []) {
  view.body = body;
  actions.countThreads();
  if (!acc.length && !body.firstChild) replace(body, h('p', { class: 'muted pad' }, 'Looking for your threads…'));
  try {
    const res = await api.get(`/api/workspaces/${state.wsId}/threads${api.q({ limit: 20, cursor })}`);
    if (view.body !== body) return;
    const threads = acc.concat(res.threads || []);
    view.shown = new Set(threads.map((t) => t.root.id));
    replace(body,
      threads.length ? h('ul', { class: 'stack results threads', role: 'list', 'aria-label': 'Your threads' }, ...threads.map(item))
        : h('p', { class: 'muted pad' }, 'No threads yet. Threads you start, reply in or are mentioned in show here.'),
      res.next_cursor ? h('button', { class: 'btn wide', type: 'button', onclick: () => renderThreads(body, res.next_cursor, threads) }, 'Older threads') : null);
  } catch (e) { replace(body, h('p', { class: 'error pad', role: 'alert' }, e.message)); }
}

/** @param {any} t a thread of the list: {root, replies, thread_state, unread_count} */
function item(t) {
  const root = upsertMessage({ ...t.root, thread_state: t.thread_state }, true);
  const replies = (t.replies || []).map((m) => upsertMessage(m, true));
  const c = root.channel_id && state.channels.get(root.channel_id);
  const where = root.channel_id ? `#${c ? c.name : 'channel'}` : 'Direct message';
  const more = t.thread_state.reply_count - replies.length;
  const open = () => {
    t.unread_count = 0;
    actions.openPanel({ kind: 'thread', rootId: root.id });
  };
  return h('li', { class: 'card thread-item', dataset: { root: root.id } },
    h('div', { class: 'reply-count' }, h('span', { class: 'result-head' }, where),
      t.unread_count ? h('span', { class: 'badge', 'aria-label': `${t.unread_count} new ${t.unread_count === 1 ? 'reply' : 'replies'}` }, `${t.unread_count} new`) : null),
    renderRow(root, { grouped: false, day: false, inThread: true }),
    more > 0 ? h('div', { class: 'reply-count' }, `${more} more ${more === 1 ? 'reply' : 'replies'}`) : null,
    ...replies.map((m) => renderRow(m, { grouped: false, day: false, inThread: true })),
    h('button', { class: 'btn small open-thread', type: 'button', onclick: open }, 'Open thread'));
}

registerPanel('threads', { title: 'Threads', render(body, panel, { fresh }) { if (fresh) renderThreads(body, undefined); } });

// A reply in a listed thread, or one that may be in a thread of the reader's, redraws the first
// page (once for a burst) while the view is open.
on('thread.reply_created', (ev) => {
  const m = ev.payload.message;
  const body = view.body;
  if (!m || !body || !body.isConnected || !state.panel || state.panel.kind !== 'threads') return;
  const me = state.me && state.me.id;
  const mine = view.shown.has(m.thread_root_id) || m.author_id === me
    || ((ev.payload.thread_state || {}).last_reply_author_ids || []).includes(me);
  if (!mine && !/@/.test(m.body || '')) return;
  clearTimeout(view.timer);
  view.timer = setTimeout(() => renderThreads(body, undefined), 300);
});
