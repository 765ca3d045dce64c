// @ts-check
// lazy/switcher.js is the quick switcher (Ctrl/⌘+K): a modal dialog over the page that finds a
// channel, a direct conversation or a person by a loose match of what is typed; ↑/↓ move, Enter
// goes there (a person opens or creates the conversation with them), Esc closes it and gives the
// focus back to where it was. While it is open the rest of the page is inert, so Tab stays in it.
import { h, replace, icon, avatar, displayName, byName } from '../dom.js';
import { state } from '../store.js';
import * as actions from '../actions.js';
import { dmName } from '../views/sidebar.js';
import { Matcher } from './match.js';
import { ensure, dot, styles, withDot } from './presence.js';

const LIMIT = 30; // entries shown at most
const RANK = { channel: 0, dm: 1, person: 2 };

class Switcher {
  constructor() {
    this.input = h('input', { type: 'text', class: 'qs-input', role: 'combobox', 'aria-expanded': 'true', 'aria-controls': 'qs-list',
      'aria-autocomplete': 'list', 'aria-labelledby': 'qs-title', autocomplete: 'off', spellcheck: false, placeholder: 'Channel, conversation or person',
      oninput: () => { this.sel = 0; this.render(); this.findPeople(); }, onkeydown: (e) => this.key(e) });
    this.list = h('ul', { class: 'qs-list', id: 'qs-list', role: 'listbox', 'aria-label': 'Matches' });
    this.box = h('div', { class: 'qs', role: 'dialog', 'aria-modal': 'true', 'aria-labelledby': 'qs-title' },
      h('h2', { id: 'qs-title', class: 'qs-title' }, 'Jump to'), this.input, this.list,
      h('p', { class: 'qs-hint muted' }, '↑/↓ to move · Enter to go · Esc to close'));
    this.el = h('div', { class: 'qs-backdrop', hidden: true, onmousedown: (e) => { if (e.target === this.el) this.close(); } }, this.box);
    this.el.addEventListener('keydown', (e) => this.trap(e));
    this.people = new Map(); // user id → user, from the directory
    this.entries = [];
    this.sel = 0;
    this.back = null;
  }

  get isOpen() { return !this.el.hidden; }

  open() {
    if (this.isOpen) { this.input.select(); return; }
    if (!this.el.isConnected) document.body.appendChild(this.el);
    this.back = /** @type {HTMLElement} */ (document.activeElement);
    if (this.wsId !== state.wsId) this.people.clear();
    this.wsId = state.wsId;
    this.input.value = '';
    this.sel = 0;
    this.matcher = new Matcher(this.candidates(), byName);
    this.el.hidden = false;
    // The page behind a modal dialog takes no focus and no pointer.
    for (const el of /** @type {HTMLCollectionOf<HTMLElement>} */ (document.body.children)) if (el !== this.el && el.tagName !== 'SCRIPT') el.inert = true;
    this.render();
    this.input.focus();
    this.findPeople();
    styles();
    ensure().then(() => { if (this.isOpen) this.render(); }, () => {});
  }

  close(restore = true) {
    if (!this.isOpen) return;
    this.el.hidden = true;
    for (const el of /** @type {HTMLCollectionOf<HTMLElement>} */ (document.body.children)) el.inert = false;
    if (restore && this.back && this.back.isConnected) this.back.focus();
    this.back = null;
  }

  // findPeople asks the directory for people matching what is typed (the first page when nothing
  // is), a little after the typing stops; answers for an older query are still kept.
  findPeople() {
    clearTimeout(this.timer);
    const q = this.input.value.trim();
    this.timer = setTimeout(async () => {
      try {
        const res = await actions.members(q);
        const fresh = [];
        for (const m of res.members || []) {
          if (!m.user || m.user.kind === 'bot' || this.people.has(m.user.id)) continue;
          this.people.set(m.user.id, m.user);
          fresh.push(m.user);
        }
        if (!this.isOpen || !this.matcher) return;
        this.matcher.add(this.personEntries(fresh));
        if (fresh.length) this.render();
      } catch { /* the places still match */ }
    }, q ? 150 : 0);
  }

  // candidates are every place in the sidebar and every person known, a person with whom a
  // one-to-one conversation is listed showing as that conversation. They are read once per
  // opening: what is typed is then matched against them, not against the store.
  candidates() {
    const me = state.me && state.me.id;
    const out = [];
    for (const c of state.channels.values()) {
      if (!c.archived) out.push({ kind: 'channel', rank: RANK.channel, id: c.id, label: c.name, sigil: actions.sigilOf(c), extra: c.display_title && c.display_title !== c.name ? c.display_title : '' });
    }
    this.withDM = new Set();
    for (const d of state.dms.values()) {
      const others = (d.members || []).filter((u) => u.id !== me);
      if (others.length === 1) this.withDM.add(others[0].id);
      out.push({ kind: 'dm', rank: RANK.dm, id: d.id, label: dmName(d), extra: others.map((u) => (state.users.get(u.id) || u).handle).filter(Boolean).map((x) => `@${x}`).join(' '), user: others[0] || state.me, conv: d });
    }
    return out.concat(this.personEntries(this.people.values()));
  }

  personEntries(users) {
    const me = state.me && state.me.id;
    const out = [];
    for (const u of users) {
      if (u.id !== me && !this.withDM.has(u.id)) out.push({ kind: 'person', rank: RANK.person, id: u.id, label: displayName(u), extra: u.handle ? `@${u.handle}` : '', user: u, conv: null });
    }
    return out;
  }

  // render ranks the candidates against what is typed and draws the best of them.
  render() {
    const q = this.input.value.trim();
    this.entries = this.matcher.find(q, LIMIT).map((x) => x.item);
    this.sel = Math.min(this.sel, Math.max(this.entries.length - 1, 0));
    if (!this.entries.length) {
      replace(this.list, h('li', { class: 'qs-none', role: 'option', 'aria-disabled': 'true', 'aria-selected': 'false' }, `Nothing matches “${q}”`));
      this.input.removeAttribute('aria-activedescendant');
      return;
    }
    const kinds = { channel: 'Channel', dm: 'Conversation', person: 'Person' };
    replace(this.list, ...this.entries.map((c, i) => h('li', {
      class: 'qs-item', role: 'option', id: `qs-${i}`, 'aria-selected': 'false',
      dataset: { kind: c.kind, id: c.id },
      onmousedown: (e) => { e.preventDefault(); this.choose(i); },
    }, c.kind === 'channel' ? h('span', { class: 'sigil', title: c.sigil === 'lock' ? 'Private channel' : null }, icon(c.sigil))
      : c.conv ? withDot(avatar(c.user, 'xs'), c.conv) : h('span', { class: 'avatar-wrap' }, avatar(c.user, 'xs'), dot(c.user.id)),
    h('span', { class: 'qs-label' }, c.label), c.extra ? h('span', { class: 'qs-extra muted' }, c.extra) : null,
    h('span', { class: 'qs-kind muted' }, kinds[c.kind]))));
    this.select(this.sel);
  }

  // select marks entry i as the one Enter takes; moving it draws nothing else.
  select(i) {
    const was = this.list.children[this.sel];
    if (was) { was.classList.remove('sel'); was.setAttribute('aria-selected', 'false'); }
    this.sel = i;
    const now = this.list.children[i];
    now.classList.add('sel');
    now.setAttribute('aria-selected', 'true');
    this.input.setAttribute('aria-activedescendant', `qs-${i}`);
    now.scrollIntoView({ block: 'nearest' });
  }

  key(e) {
    const n = this.entries.length;
    if ((e.key === 'ArrowDown' || e.key === 'ArrowUp') && n) {
      e.preventDefault();
      this.select((this.sel + (e.key === 'ArrowDown' ? 1 : n - 1)) % n);
    } else if (e.key === 'Enter') {
      e.preventDefault();
      this.choose(this.sel);
    }
  }

  // trap keeps Esc and Tab inside the dialog: the page's own shortcuts never see them.
  trap(e) {
    if (e.key === 'Escape') { e.preventDefault(); e.stopPropagation(); this.close(); return; }
    if (e.key === 'Tab') { e.preventDefault(); this.input.focus(); }
    e.stopPropagation();
  }

  async choose(i) {
    const c = this.entries[i];
    if (!c) return;
    this.close(false);
    // Arriving somewhere, the keyboard is in its composer (the same element for every place), at
    // once: not after the place loads, when the person may have moved on.
    const box = document.querySelector('form.composer .compose-box');
    if (box) box.focus();
    try {
      if (c.kind === 'person') await actions.openDM([c.id]);
      else await actions.openPlace(actions.viewOf(c.id));
    } catch (err) { actions.toast(err.message); }
  }
}

let switcher = null;

// openSwitcher shows the quick switcher (Ctrl/⌘+K).
export function openSwitcher() {
  if (!state.wsId) return;
  if (!switcher) switcher = new Switcher();
  switcher.open();
}
