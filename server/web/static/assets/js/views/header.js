// @ts-check
// views/header.js: the open place's name and title, the member count, and the buttons of the
// side panels (pins, search, people).
import { h, replace, icon, pdot } from '../dom.js';
import { state } from '../store.js';
import * as actions from '../actions.js';
import { dmName } from './sidebar.js';
import { openDrawer } from './drawer.js';

export class Header {
  constructor() {
    this.title = h('div', { class: 'title' });
    this.search = h('input', { class: 'search', type: 'search', placeholder: 'Search', 'aria-label': 'Search messages',
      onkeydown: (e) => { if (e.key === 'Enter' && this.search.value.trim()) actions.openPanel({ kind: 'search', q: this.search.value.trim() }); } });
    this.buttons = h('div', { class: 'tools' });
    // The search box stays in place across renders, so typing in it is never interrupted.
    this.menu = h('button', { class: 'icon-btn nav-toggle', title: 'Channels and people', 'aria-label': 'Channels and people',
      'aria-expanded': 'false', onclick: (e) => openDrawer(e.currentTarget) }, icon('menu'));
    this.el = h('header', { class: 'conv-header' }, this.menu, this.title, this.buttons, this.search);
  }

  // count asks the directory for the workspace's head count once per opening of a workspace
  // (the store clears it then); a failure leaves the count out rather than retrying.
  count() {
    if (state.memberCount !== null || this.counting) return;
    this.counting = true;
    actions.countMembers().finally(() => { this.counting = false; });
  }

  render() {
    const v = state.view;
    this.search.hidden = !v;
    if (!v) { this.key = null; replace(this.title); replace(this.buttons); return; }
    if (state.wsId) this.count();
    const place = state.channels.get(v.id) || state.dms.get(v.id) || {};
    const key = JSON.stringify([v.id, place.name, place.display_title, place.archived, place.visibility, place.members && dmName(place), place.starred,
      state.memberCount, state.panel && state.panel.kind]);
    if (key === this.key) return;
    this.key = key;
    if (v.kind === 'channel') {
      const c = state.channels.get(v.id) || {};
      replace(this.title,
        h('h1', null, h('span', { class: 'sigil', title: c.visibility === 'private' ? 'Private channel' : null }, icon(actions.sigilOf(c))), c.name || ''),
        c.display_title && c.display_title !== c.name ? h('p', { class: 'topic' }, c.display_title) : null,
        c.archived ? h('span', { class: 'tag' }, 'archived') : null,
        h('button', { class: `icon-btn star${c.starred ? ' on' : ''}`, title: 'Star', 'aria-pressed': String(!!c.starred),
          onclick: () => import('../lazy/channels.js').then((m) => m.toggleStar(v.id)) }, icon('star')));
    } else {
      const d = state.dms.get(v.id) || {};
      // The others' dot (one's own in a note to self).
      const ids = (d.members || []).map((u) => u.id), them = ids.filter((id) => id !== (state.me && state.me.id));
      replace(this.title, h('h1', null, ids.length ? pdot(them.length ? them : ids, them.length > 1) : null, dmName(d)),
        h('p', { class: 'topic' }, 'Direct message'));
    }
    const tool = (name, label, panel) => h('button', { class: `icon-btn${state.panel && state.panel.kind === panel.kind ? ' on' : ''}`,
      title: label, 'aria-label': label, onclick: () => actions.openPanel(state.panel && state.panel.kind === panel.kind ? null : panel) }, icon(name));
    replace(this.buttons,
      typeof state.memberCount === 'number' ? h('button', { class: 'members-count', title: 'People in this workspace', onclick: () => actions.openPanel({ kind: 'members' }) },
        icon('people'), String(state.memberCount)) : null,
      v.kind === 'channel' ? tool('pin', 'Pinned messages', { kind: 'pins' }) : null,
      v.kind === 'channel' && (state.channels.get(v.id) || {}).visibility === 'private'
        ? tool('people', 'Channel members', { kind: 'channel-members', channelId: v.id }) : null,
      v.kind === 'channel' ? tool('more', 'Channel details', { kind: 'channel-about', channelId: v.id }) : null,
      v.kind === 'channel' ? tool('gear', 'Channel settings', { kind: 'channel', channelId: v.id }) : null);
  }
}
