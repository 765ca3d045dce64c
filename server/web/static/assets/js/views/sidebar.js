// @ts-check
// views/sidebar.js: workspace switcher, starred channels, channels by section (archived and left
// hidden, muted dimmed), direct messages,
// unread and mention badges, the workspace menu, and the signed-in person with their menu and
// sign-out.
import { h, replace, icon, avatar, displayName, byName } from '../dom.js';
import { state, touch } from '../store.js';
import * as actions from '../actions.js';
import { menuButton } from './menu.js';
import { registerLazyPanel, registerMenuItem } from './registry.js';
import { WindowedList } from './windowed.js';

// Finding what is new across places (lazy/mentions.js, fetched when first used): the Mentions
// panel, opened from the top of the sidebar, and "Mark all read".
const mentions = () => import('../lazy/mentions.js');
registerLazyPanel('mentions', 'Mentions', mentions);
registerMenuItem('workspace', { label: 'Mark all read', order: 5, run: () => mentions().then((m) => m.markAllRead()) });
registerLazyPanel('threads', 'Threads', () => import('../lazy/threads.js'));
// Presence dots (lazy/presence.js): fetched when idle, once a place loaded, if someone else is in sight.
let presence = /** @type {any} */ (null), asked = false;

export function dmName(d) {
  const me = state.me && state.me.id;
  const others = (d.members || []).filter((u) => u.id !== me);
  if (!others.length) return `${displayName(state.me)} (you)`;
  return others.map((u) => displayName(state.users.get(u.id) || u)).join(', ');
}

export class Sidebar {
  constructor() {
    this.filter = h('input', { class: 'filter', type: 'search', placeholder: 'Filter…', 'aria-label': 'Filter channels and conversations',
      oninput: () => this.render(), onkeydown: (e) => {
        if (e.key === 'Enter') { const first = this.order()[0]; if (first) { this.filter.value = ''; actions.openPlace(actions.viewOf(first)); } }
      } });
    this.switcher = h('select', { class: 'ws-switch', 'aria-label': 'Workspace', onchange: () => actions.openWorkspace(this.switcher.value) });
    this.nav = h('nav', { class: 'places', 'aria-label': 'Channels and direct messages' });
    this.lists = [];
    this.rowH = {}; // row heights measured per kind of list, kept across redraws
    let frame = 0;
    const redraw = () => { if (!frame) frame = requestAnimationFrame(() => { frame = 0; this.drawWindows(); }); };
    this.nav.addEventListener('scroll', redraw, { passive: true });
    window.addEventListener('resize', redraw);
    this.me = h('div', { class: 'me' });
    // The menus are built once: their entries are read from the registry each time one opens.
    this.wsMenu = menuButton('workspace', 'Workspace menu', icon('more'), [{ label: 'People', panel: { kind: 'members' } }]);
    this.meMenu = menuButton('me', 'Your menu', icon('gear'));
    this.el = h('aside', { class: 'sidebar' }, h('div', { class: 'ws-head' }, this.switcher, this.wsMenu), this.filter, this.nav, this.me);
  }

  // order is the places in sidebar order, filtered by the quick switcher.
  order() {
    const f = this.filter.value.trim().toLowerCase();
    const chans = this.channels().flatMap(([, list]) => list).map((c) => c.id);
    const dms = this.dms().map((d) => d.id);
    const all = chans.concat(dms);
    if (!f) return all;
    return all.filter((id) => this.label(id).toLowerCase().includes(f));
  }

  label(id) {
    const c = state.channels.get(id);
    // The name is what people type and link; the display title only adds to it.
    if (c) return c.display_title && c.display_title !== c.name ? `${c.name} ${c.display_title}` : c.name;
    const d = state.dms.get(id);
    return d ? dmName(d) : '';
  }

  step(dir, unreadOnly) {
    const ids = this.order().filter((id) => !unreadOnly || id === (state.view && state.view.id) || this.unread(id));
    const i = ids.indexOf(state.view && state.view.id);
    const next = ids[(i + dir + ids.length) % ids.length];
    if (next) actions.openPlace(actions.viewOf(next));
  }

  unread(id) {
    const p = state.channels.get(id) || state.dms.get(id);
    return p && p.unread_count > 0 && p.notification_level !== 'muted';
  }

  channels() {
    const sections = new Map();
    const list = [...state.channels.values()].filter((c) => !c.archived && c.joined !== false).sort((a, b) => byName(a.name, b.name));
    const starred = list.filter((c) => c.starred);
    for (const c of list) {
      if (c.starred) continue;
      const key = c.sidebar_section || '';
      if (!sections.has(key)) sections.set(key, []);
      sections.get(key).push(c);
    }
    const out = [...sections.entries()].sort(([a], [b]) => (a === '' ? -1 : b === '' ? 1 : byName(a, b)));
    return starred.length ? [['Starred', starred], ...out] : out;
  }

  dms() {
    // Newest activity first, by the instant (a collation of the strings would be slower, and
    // wrong across offsets).
    const at = (d) => Date.parse(d.last_activity_at) || 0;
    return [...state.dms.values()].sort((a, b) => at(b) - at(a));
  }

  render() {
    const ws = state.workspaces;
    if (this.switcher.options.length !== ws.length || [...this.switcher.options].some((o, i) => o.textContent !== ws[i].name)) {
      replace(this.switcher, ...ws.map((w) => h('option', { value: w.id }, w.name)));
    }
    this.switcher.value = state.wsId || '';
    const f = this.filter.value.trim().toLowerCase();
    // Redraw only what changed: a list rebuilt under the pointer would swallow clicks.
    const places = [...state.channels.values(), ...state.dms.values()];
    if (state.wsId && this.counted !== state.wsId) { this.counted = state.wsId; actions.countThreads(); }
    const here = state.convs.get(state.view?.id);
    if (!asked && here?.loaded && (state.dms.size || here.ids.some((id) => state.messages.get(id)?.author_id !== state.me?.id))) {
      asked = true;
      (window.requestIdleCallback || setTimeout)(() => import('../lazy/presence.js').then(async (m) => { m.styles(); await m.ensure(); presence = m; touch('presence'); })
        .catch(() => { asked = false; }));
    }
    const navKey = JSON.stringify([f, state.view && state.view.id, [...state.mentions], state.threadsUnread, places.map((p) => [p.id, p.name, p.display_title, p.visibility,
      p.archived, p.sidebar_section, p.unread_count, p.joined, p.starred, p.notification_level, p.last_activity_at, p.members && dmName(p), p.members && presence?.seen(p).label])]);
    if (navKey !== this.navKey) {
      this.navKey = navKey;
      this.renderNav(f);
      const open = state.view && state.view.id;
      // After this frame's other views have drawn (the message list measures its rows).
      if (open !== this.revealed) { this.revealed = open; requestAnimationFrame(() => this.reveal(open)); }
    }
    const me = state.me;
    const dot = state.conn === 'open' && navigator.onLine ? 'online' : 'offline';
    const meKey = JSON.stringify([displayName(me), dot, me && me.avatar_url]);
    if (meKey === this.meKey) return;
    this.meKey = meKey;
    replace(this.me, h('span', { class: 'me-avatar' }, avatar(me, 'sm'), h('span', { class: `dot ${dot}`, title: dot })),
      h('span', { class: 'me-name' }, displayName(me)),
      this.meMenu,
      h('button', { class: 'icon-btn', title: 'Sign out', 'aria-label': 'Sign out', onclick: () => actions.signOut() }, icon('out')));
  }

  renderNav(f) {
    const match = (id) => !f || this.label(id).toLowerCase().includes(f);
    // Views across places: the mentions (the count seen live) and one's threads (the server's count).
    const mentioned = [...state.mentions.values()].reduce((a, b) => a + b, 0);
    const link = (kind, ic, label, n, what) => h('li', null, h('button', { class: 'view-link', type: 'button', onclick: () => actions.openPanel({ kind }) },
      icon(ic), h('span', { class: 'label' }, label), n ? h('span', { class: 'badge', 'aria-label': `${n} ${what}` }, String(n)) : null));
    const groups = [h('ul', { class: 'views', role: 'list' }, link('mentions', 'at', 'Mentions', mentioned, 'new mentions'),
      link('threads', 'thread', 'Threads', state.threadsUnread, 'unread threads'))];
    // Each group's rows are windowed: only those near the viewport are drawn.
    this.lists = [];
    const windowed = (kind, ids, make) => {
      const ul = h('ul', { role: 'list' });
      this.lists.push({ kind, list: new WindowedList(ul, ids, make, this.rowH[kind]) });
      return ul;
    };
    const channelRow = (id) => {
      const c = state.channels.get(id);
      return this.item(id, h('span', { class: 'sigil', title: c.visibility === 'private' ? 'Private channel' : null }, icon(actions.sigilOf(c))),
        c.name, null, c.display_title && c.display_title !== c.name ? c.display_title : null);
    };
    for (const [section, list] of this.channels()) {
      const ids = list.map((c) => c.id).filter(match);
      if (!ids.length) continue;
      groups.push(h('div', { class: 'group' },
        h('div', { class: 'group-head' }, h('span', null, section || 'Channels'),
          section ? null : h('button', { class: 'icon-btn', title: 'New channel', 'aria-label': 'New channel', onclick: () => this.newChannel() }, icon('plus')),
          section ? null : h('button', { class: 'icon-btn', title: 'Create private channel', 'aria-label': 'Create private channel',
            onclick: () => this.newChannel('private') }, icon('lock'))),
        windowed('channel', ids, channelRow)));
    }
    const dmRow = (id) => {
      const d = state.dms.get(id);
      const other = (d.members || []).find((u) => u.id !== (state.me && state.me.id)) || state.me;
      const pic = avatar(other, 'xs');
      return this.item(d.id, presence ? presence.withDot(pic, d) : pic, dmName(d), h('button', { class: 'icon-btn hide-dm', title: 'Hide conversation', 'aria-label': `Hide conversation with ${dmName(d)}`,
        onclick: (e) => { e.stopPropagation(); actions.hideDM(d.id); } }, icon('close')));
    };
    groups.push(h('div', { class: 'group' },
      h('div', { class: 'group-head' }, h('span', null, 'Direct messages'),
        h('button', { class: 'icon-btn', title: 'New message', 'aria-label': 'New direct message', onclick: () => actions.openPanel({ kind: 'members' }) }, icon('plus'))),
      windowed('dm', this.dms().map((d) => d.id).filter(match), dmRow)));
    replace(this.nav, ...groups);
    this.drawWindows();
  }

  // drawWindows draws each list's rows near the viewport, keeping what they learnt of row
  // heights. The layout is read once, before any list writes (a read after a write would lay
  // the page out again, once per list).
  drawWindows() {
    const top = this.nav.scrollTop, height = this.nav.clientHeight;
    let at = this.lists.map(({ list }) => list.offset(this.nav));
    this.lists.forEach(({ kind, list: l }, i) => {
      // A list whose rows are all out of view yet takes the height its kind's rows were measured at.
      const known = this.rowH[kind];
      if (!l.measured && known) { l.rowH = known; l.measured = true; l.first = -1; }
      // A first measurement moves the lists below: read their offsets again (once per page).
      if (l.draw(this.nav, { at: at[i], top, height })) at = this.lists.map(({ list }) => list.offset(this.nav));
      if (l.measured) this.rowH[kind] = l.rowH;
    });
  }

  // reveal scrolls the open place's row into the sidebar's view (Alt+↑/↓, a jump to an unread
  // place, a link): it may be far outside the rows drawn.
  reveal(id) {
    for (const { list: l } of this.lists) {
      const i = l.keys.indexOf(id);
      if (i >= 0) { l.reveal(this.nav, i); this.drawWindows(); return; }
    }
  }

  item(id, lead, label, trailing, title) {
    const p = state.channels.get(id) || state.dms.get(id);
    const active = state.view && state.view.id === id;
    const mentions = state.mentions.get(id) || 0;
    const muted = p.notification_level === 'muted';
    const unread = p.unread_count > 0 && !active && !muted;
    return h('li', null, h('a', {
      class: `place${active ? ' active' : ''}${unread ? ' unread' : ''}${muted ? ' muted-place' : ''}`, href: '#', 'aria-current': active ? 'page' : null,
      dataset: { place: id }, title,
      onclick: (e) => { e.preventDefault(); actions.openPlace(actions.viewOf(id)); },
    }, lead, h('span', { class: 'label' }, label),
    mentions && !active ? h('span', { class: 'badge', 'aria-label': `${mentions} mentions` }, String(mentions)) :
      unread ? h('span', { class: 'count', 'aria-label': `${p.unread_count} unread` }, String(p.unread_count)) : null,
    trailing));
  }

  // newChannel asks for the name in place, at the top of the channel list; a private channel's
  // creator is its only member until they add others (the members panel).
  newChannel(visibility = 'public') {
    const priv = visibility === 'private';
    const input = h('input', { type: 'text', class: 'new-channel', placeholder: priv ? 'private-channel-name' : 'new-channel-name',
      'aria-label': priv ? 'Name of the new private channel' : 'Name of the new channel',
      onkeydown: async (e) => {
        if (e.key === 'Escape') { e.stopPropagation(); this.navKey = null; this.render(); return; }
        if (e.key !== 'Enter' || !input.value.trim()) return;
        try { await actions.createChannel(input.value.trim(), visibility); } catch (err) { actions.toast(err.message); }
        this.navKey = null;
        this.render();
      } });
    this.nav.prepend(input);
    input.focus();
  }
}
