// @ts-check
// views/list.js is the virtualised message list: only rows near the viewport are in the DOM,
// each row is measured once per version of its message, spacers stand in for the rest, and the
// row at the top of the viewport stays where it was when pages load above it.
import { state, conv, seqOf } from '../store.js';
import * as actions from '../actions.js';
import { renderRow } from './row.js';
import { isOpened } from './body.js';
import { h, replace } from '../dom.js';
import { dmName } from './sidebar.js';
import { rowPartsKey } from './registry.js';
import { rove } from './msgkeys.js';

const ESTIMATE = 64; // px, the height assumed for a row not yet measured
const OVERSCAN = 900; // px of rows kept above and below the viewport
const STICK_OVERSCAN = 300; // px kept above it while the list follows the newest message
const GROUP_MS = 5 * 60 * 1000;
const DRAW_MS = 12; // of a frame's 50 ms before it is a long task: layout and paint follow

export class MessageList {
  constructor() {
    this.top = h('div', { class: 'spacer' });
    this.bottom = h('div', { class: 'spacer' });
    this.rows = h('div', { class: 'rows' });
    this.jump = h('button', { class: 'jump', hidden: true, onclick: () => actions.jumpToLatest(state.view) }, 'Jump to latest ↓');
    this.intro = h('div', { class: 'intro', hidden: true });
    this.el = h('div', { class: 'list', role: 'log', 'aria-label': 'Messages', tabIndex: -1 }, this.top, this.intro, this.rows, this.bottom);
    // The "N new messages" bar, while the line at the first unread message is above the viewport.
    this.newText = h('span');
    this.newBar = h('div', { class: 'new-bar', role: 'status', hidden: true }, this.newText, ' ',
      h('button', { class: 'link', onclick: () => this.toLine() }, 'Jump'));
    this.wrap = h('div', { class: 'list-wrap' }, this.el, this.newBar, this.jump);
    this.heights = new Map(); // id → measured px
    this.nodes = new Map(); // id → { el, key }
    this.placeId = null;
    this.stick = true;
    this.more = 0; // the frame that draws the rows a frame left for later
    this.frameAt = -1; // the frame whose row budget runs out at this.until
    this.until = 0;
    this.el.addEventListener('scroll', () => {
      if (this.scrollQueued) return;
      this.scrollQueued = true;
      requestAnimationFrame(() => {
        this.scrollQueued = false;
        // render()'s own scroll to the newest message: its rows are drawn.
        const own = this.el.scrollTop === this.scrolledTo;
        this.scrolledTo = null;
        if (own) return;
        this.stick = this.atBottom();
        this.render(true);
      });
    }, { passive: true });
    new ResizeObserver(() => this.render(true)).observe(this.el);
    this.el.addEventListener('dragover', (e) => e.preventDefault());
  }

  get elRoot() { return this.wrap; }

  atBottom() { return this.el.scrollHeight - this.el.scrollTop - this.el.clientHeight < 40; }

  // entries is the window's messages with the unsent ones each after the message that was last
  // when it was written (first, in a place that was empty; last, when that one is not here).
  entries() {
    const c = conv(state.view.id);
    const after = new Map();
    for (const p of c.pending) {
      const k = p.after || '';
      if (!after.has(k)) after.set(k, []);
      after.get(k).push(p);
    }
    const out = [];
    if (!c.hasOlder && after.has('')) { out.push(...after.get('')); after.delete(''); }
    for (const id of c.ids) {
      const m = state.messages.get(id);
      if (m) out.push(m);
      if (after.has(id)) { out.push(...after.get(id)); after.delete(id); }
    }
    if (!c.hasNewer) for (const list of after.values()) out.push(...list);
    return out;
  }

  // render draws the rows of the window; onScroll is true when only the viewport moved.
  render(onScroll = false) {
    if (!state.view) { this.rows.replaceChildren(); this.nodes.clear(); return; }
    if (this.placeId !== state.view.id) {
      this.placeId = state.view.id;
      this.rows.replaceChildren();
      this.nodes.clear();
      this.stick = true;
      this.anchor = null;
    }
    const c = conv(state.view.id);
    // Only an empty place has the intro, so it never moves the rows the offsets below measure.
    this.intro.hidden = !c.loaded || c.hasOlder || c.ids.length > 0 || c.pending.length > 0;
    if (!this.intro.hidden) renderIntro(this.intro, state.view);
    if (c.toBottom) { actions.setConv(state.view.id, { toBottom: false }); this.stick = true; this.anchor = null; }
    const list = this.entries();
    const el = this.el;
    // Remember where the reader is: the first row on screen and its distance from the top.
    let anchor = null;
    if (!this.stick) {
      for (const [id, n] of this.nodes) {
        const top = n.el.offsetTop - el.scrollTop;
        if (top + n.el.offsetHeight > 0 && (!anchor || top < anchor.top)) anchor = { id, top };
      }
    }
    const offsets = new Array(list.length + 1);
    offsets[0] = 0;
    for (let i = 0; i < list.length; i++) offsets[i + 1] = offsets[i] + (this.heights.get(list[i].id) || ESTIMATE);
    let viewTop = el.scrollTop;
    if (anchor) {
      const i = list.findIndex((m) => m.id === anchor.id);
      if (i >= 0) viewTop = offsets[i] - anchor.top;
    } else if (this.stick || c.focus) viewTop = Math.max(0, offsets[list.length] - el.clientHeight);
    if (c.focus) {
      const i = list.findIndex((m) => m.channel_seq >= c.focus.seq);
      if (i >= 0) viewTop = Math.max(0, offsets[i] - el.clientHeight / 3);
    }
    let first = 0;
    // Following the newest message, less is kept above the viewport: a burst then does not keep
    // drawing rows nobody looks at (a scroll up draws them, as any scroll does).
    const above = this.stick && !c.focus ? STICK_OVERSCAN : OVERSCAN;
    while (first < list.length && offsets[first + 1] < viewTop - above) first++;
    let last = first;
    while (last < list.length && offsets[last] < viewTop + el.clientHeight + OVERSCAN) last++;
    // Rows above the viewport may wait for the next frame; so may the rows on it while a place
    // already drawn sticks to the newest message (a burst), never at a place's first drawing.
    let onScreen = first;
    while (onScreen < last && offsets[onScreen + 1] <= viewTop) onScreen++;
    first = this.draw(list, first, last, c, this.stick && this.nodes.size && !c.focus ? last : onScreen);
    rove(this.el);
    // The first rows drawn are the channel's first paint; docs/performance.md measures it.
    if (!this.painted && last > first) { this.painted = true; performance.mark('natter-channel-painted'); }
    // The spacers (rows outside the window) before measuring: one layout, not two.
    this.top.style.height = `${offsets[first]}px`;
    this.bottom.style.height = `${offsets[list.length] - offsets[last]}px`;
    // Measure what was drawn, then fix the scroll position.
    let changed = false;
    for (let i = first; i < last; i++) {
      const n = this.nodes.get(list[i].id);
      const hgt = n.el.offsetHeight;
      if (hgt && this.heights.get(list[i].id) !== hgt) { this.heights.set(list[i].id, hgt); changed = true; }
    }
    if (changed) for (let i = 0; i < list.length; i++) offsets[i + 1] = offsets[i] + (this.heights.get(list[i].id) || ESTIMATE);
    if (c.focus) {
      const i = list.findIndex((m) => m.channel_seq >= c.focus.seq);
      const target = i >= 0 ? offsets[i] - el.clientHeight / 3 : offsets[list.length];
      el.scrollTop = target;
      if (i >= 0 && c.focus.highlight) {
        const n = this.nodes.get(list[i].id);
        if (n) { n.el.querySelector('.msg').classList.add('highlight'); setTimeout(() => n.el.querySelector('.msg')?.classList.remove('highlight'), 2500); }
      }
      actions.setConv(state.view.id, { focus: null });
      this.stick = this.atBottom() && !c.hasNewer;
    } else if (this.stick && !c.hasNewer) {
      el.scrollTop = el.scrollHeight;
      this.scrolledTo = el.scrollTop;
    } else if (anchor) {
      const n = this.nodes.get(anchor.id);
      if (n) {
        const want = n.el.offsetTop - anchor.top;
        if (Math.abs(el.scrollTop - want) > 1) el.scrollTop = want;
      }
    }
    this.jump.hidden = !c.hasNewer;
    this.showNewBar(list, offsets, c);
    if (el.scrollTop < OVERSCAN && c.hasOlder && !c.busy) actions.loadOlder(state.view);
    if (el.scrollHeight - el.scrollTop - el.clientHeight < OVERSCAN && c.hasNewer && !c.busy) actions.loadNewer(state.view);
    if (!onScroll && this.stick && document.visibilityState === 'visible') actions.markRead(state.view);
  }

  showNewBar(list, offsets, c) {
    let above = false;
    if (c.firstUnreadSeq) {
      const i = list.findIndex((m) => m.channel_seq === c.firstUnreadSeq);
      // Not in the window: above it when the window starts after the line.
      above = i >= 0 ? offsets[i + 1] <= this.el.scrollTop : list.length > 0 && seqOf(list[0]) > c.firstUnreadSeq;
    }
    this.newBar.hidden = !above;
    if (above) this.newText.textContent = `${c.newCount} new message${c.newCount === 1 ? '' : 's'}`;
  }

  async toLine() {
    const view = state.view, c = conv(view.id);
    if (!c.firstUnreadSeq) return;
    if (!c.ids.some((id) => state.messages.get(id)?.channel_seq === c.firstUnreadSeq)) {
      await actions.loadPage(view, { around_seq: c.firstUnreadSeq }, true);
    }
    actions.setConv(view.id, { focus: { seq: c.firstUnreadSeq } });
    this.stick = false;
    this.render();
  }

  // draw puts rows first..last-1 in the DOM, from the bottom up, and returns the first row drawn:
  // building rows above budgetFrom stops once the frame has built four and spent DRAW_MS on
  // rows (a burst's frame would otherwise build every row that arrived since the last one), and
  // the rest are drawn in the frames that follow.
  draw(list, first, last, c, budgetFrom) {
    const keep = new Set();
    let before = null, top = first, made = 0;
    // One budget per frame, however many renders it runs (the store's flush, a scroll, rows
    // left from the frame before): the document timeline's time is the frame's.
    const frame = Number(document.timeline.currentTime);
    if (this.frameAt !== frame) { this.frameAt = frame; this.until = performance.now() + DRAW_MS; }
    for (let i = last - 1; i >= first; i--) {
      const m = list[i];
      const prev = list[i - 1];
      const day = !prev || new Date(prev.created_at).toDateString() !== new Date(m.created_at).toDateString();
      const grouped = !day && prev && prev.author_id === m.author_id && !prev.deleted_at &&
        Date.parse(m.created_at) - Date.parse(prev.created_at) < GROUP_MS && !m.quoted_message_id;
      const unreadLine = c.firstUnreadSeq && m.channel_seq === c.firstUnreadSeq;
      const key = `${grouped}|${day}|${unreadLine}|${state.editing === m.id}|${m.failed}|${m.waiting}|${m.progress}|${isOpened(m.id)}|${rowPartsKey(m)}`;
      let n = this.nodes.get(m.id);
      if (!n || n.msg !== m || n.key !== key) {
        if (i < budgetFrom && made >= 4 && performance.now() > this.until) { top = i + 1; break; }
        made++;
        const el = renderRow(m, { grouped, day, unreadLine });
        if (n) n.el.replaceWith(el);
        n = { el, msg: m, key };
        this.nodes.set(m.id, n);
        this.heights.delete(m.id);
      }
      keep.add(m.id);
      if (n.el.parentNode !== this.rows || n.el.nextSibling !== before) this.rows.insertBefore(n.el, before);
      before = n.el;
    }
    // Rows of the window above where this frame stopped leave the page but are kept, to come
    // back unchanged in the next frame rather than be built again.
    const spare = new Set();
    for (let i = first; i < top; i++) spare.add(list[i].id);
    for (const [id, n] of this.nodes) {
      if (keep.has(id)) continue;
      n.el.remove();
      if (!spare.has(id)) this.nodes.delete(id);
    }
    if (top > first && !this.more) this.more = requestAnimationFrame(() => { this.more = 0; this.render(true); });
    return top;
  }
}

// renderIntro: an empty place says where the reader is: "This is the start of #name" (or of the
// conversation), the display title, and for a channel "Invite people": the add-people dialog
// (lazy/channels.js), which also offers owners and moderators a workspace invite.
function renderIntro(el, view) {
  const c = view.kind === 'channel' ? state.channels.get(view.id) : null;
  const key = JSON.stringify([view.id, c && [c.name, c.display_title, c.visibility]]);
  if (el.dataset.key === key) return;
  el.dataset.key = key;
  if (!c) {
    replace(el, h('h2', null, `This is the start of your conversation with ${dmName(state.dms.get(view.id) || {})}`));
    return;
  }
  const invite = { kind: 'add-members', channelId: c.id };
  replace(el, h('h2', null, `This is the start of ${c.visibility === 'private' ? '' : '#'}${c.name}`),
    c.display_title && c.display_title !== c.name ? h('p', { class: 'muted' }, c.display_title) : null,
    h('button', { class: 'btn small', type: 'button', onclick: () => actions.openPanel(invite) }, 'Invite people'));
}
