// @ts-check
// views/thread.js is the thread panel: the root, its replies (the latest 50 first, older on
// demand, at most 300 kept) and a reply composer.
import { h, replace } from '../dom.js';
import { state, thread } from '../store.js';
import * as actions from '../actions.js';
import { renderRow, emojiButton } from './row.js';
import { rove } from './msgkeys.js';
import { emojified } from './composer.js';

export class ThreadView {
  constructor() {
    this.list = h('div', { class: 'thread-list' });
    this.box = h('textarea', { class: 'compose-box', rows: 1, 'aria-label': 'Reply', placeholder: 'Reply in thread…',
      onkeydown: (e) => {
        if (e.key === 'Enter' && !e.shiftKey && !e.isComposing) {
          e.preventDefault();
          if (!this.box.value.trim()) return;
          const [root, body] = [this.rootId, this.box.value];
          this.sending = this.sending.then(() => emojified(body)).then((text) => actions.sendReply(root, text)).catch((err) => actions.toast(err.message));
          this.box.value = '';
        }
      } });
    this.el = h('div', { class: 'thread' }, this.list, h('div', { class: 'composer thread-composer' }, h('div', { class: 'compose-row' }, this.box, emojiButton(this.box))));
    this.rootId = null;
    this.sending = Promise.resolve();
    this.nodes = new Map();
  }

  render(rootId) {
    if (this.rootId !== rootId) { this.rootId = rootId; this.nodes.clear(); replace(this.list); setTimeout(() => this.box.focus()); }
    const t = thread(rootId);
    const root = state.messages.get(rootId);
    const wasBottom = this.list.scrollHeight - this.list.scrollTop - this.list.clientHeight < 40;
    const items = [];
    if (root) items.push(renderRow(root, { grouped: false, day: false, inThread: true }));
    if (t.hasOlder) items.push(h('button', { class: 'link older', onclick: () => actions.loadThread(rootId, true) }, 'Show older replies'));
    const count = root && root.thread_state ? root.thread_state.reply_count : t.ids.length;
    items.push(h('div', { class: 'reply-count' }, count === 1 ? '1 reply' : `${count} replies`));
    let prev = null;
    for (const m of t.ids.map((id) => state.messages.get(id)).filter(Boolean).concat(t.pending)) {
      const grouped = prev && prev.author_id === m.author_id && Date.parse(m.created_at) - Date.parse(prev.created_at) < 300000;
      items.push(renderRow(m, { grouped, day: false, inThread: true }));
      prev = m;
    }
    replace(this.list, ...items);
    rove(this.list);
    if (wasBottom || !this.seen) this.list.scrollTop = this.list.scrollHeight;
    this.seen = true;
  }
}
