// @ts-check
// views/commands.js: the command menu. Typing "/" at the start of the composer offers every
// bot's commands with their argument hints and the integrations' registered slash commands,
// filtered as the command is typed; ↑/↓ move, Enter or Tab takes one, Esc closes the menu.
import { h, replace, avatar, displayName } from '../dom.js';
import { state } from '../store.js';
import * as api from '../api.js';
import { loadSlash } from '../slash.js';

export class CommandMenu {
  // el is the list's element (the composer makes it before this module is fetched).
  constructor(onPick, el) {
    this.onPick = onPick;
    this.el = el;
    this.items = [];
    this.sel = 0;
    this.list = null; // { wsId, commands } loaded when the menu first opens in a workspace
    this.closedFor = null; // the text Esc closed the menu on: it stays closed until that changes
  }

  get open() { return !this.el.hidden; }

  // update follows the composer's text: the menu shows while it is "/" and a command's first word.
  async update(text) {
    this.text = text;
    const m = /^\/(\S*)$/.exec(text);
    if (!m || text === this.closedFor) { this.close(); return; }
    this.closedFor = null;
    const wsId = state.wsId;
    // Menus change whenever a bot replaces its own: read them again each time the menu opens
    // (what was read before shows meanwhile).
    const opening = !this.open;
    if (!this.list || this.list.wsId !== wsId || opening) {
      const had = this.list && this.list.wsId === wsId ? this.list.commands : null;
      if (had) this.list = { wsId, commands: had };
      if (had && opening) this.show(m[1], text);
      try {
        // Bots' menus and the integrations' registered slash commands, read together; a guest
        // may read no slash command, and the menus still show.
        const [menus, slash] = await Promise.all([api.get(`/api/workspaces/${wsId}/bot-commands`), loadSlash().catch(() => [])]);
        const registered = slash.map((c) => ({ command: c.command, description: c.description,
          bot: state.users.get(c.bot_user_id) || { id: c.bot_user_id, display_name: 'Integration' } }));
        this.list = { wsId, commands: (menus.bot_commands || []).concat(registered) };
      } catch { if (!had) { this.list = null; return; } }
      // The person may have typed on, or closed the menu, while the list was read.
      if (this.text !== text || text === this.closedFor) return;
    }
    this.show(m[1], text);
  }

  show(query, text) {
    const typed = query.toLowerCase();
    const name = (c) => c.command.replace(/^\//, '').toLowerCase();
    // A bot without a handle is found by its commands alone.
    this.items = this.list.commands.filter((c) => name(c).startsWith(typed) || (c.bot && (c.bot.handle || '').toLowerCase().startsWith(typed)));
    this.sel = Math.min(this.sel, Math.max(this.items.length - 1, 0));
    this.render(text);
  }

  render(text) {
    if (!this.items.length) {
      replace(this.el, h('li', { class: 'cmd-none', role: 'option', 'aria-disabled': 'true' },
        this.list.commands.length ? `No command starts with ${text}` : 'No bot in this workspace offers commands yet.'));
    } else {
      replace(this.el, ...this.items.map((c, i) => h('li', {
        class: `cmd${i === this.sel ? ' sel' : ''}`, role: 'option', id: `cmd-${i}`, 'aria-selected': i === this.sel ? 'true' : 'false',
        onmousedown: (e) => { e.preventDefault(); this.pick(i); },
      }, avatar(c.bot, 'xs'), h('span', { class: 'cmd-name' }, c.command), c.args_hint ? h('span', { class: 'cmd-args' }, c.args_hint) : null,
      h('span', { class: 'cmd-desc' }, c.description || ''), h('span', { class: 'cmd-bot' }, displayName(c.bot)))));
    }
    this.el.hidden = false;
    this.el.setAttribute('aria-activedescendant', this.items.length ? `cmd-${this.sel}` : '');
  }

  close() { this.el.hidden = true; this.sel = 0; }

  pick(i) {
    const c = this.items[i];
    if (!c) return;
    this.close();
    this.onPick(`${c.command} `);
  }

  // key handles a keydown in the composer; true means the menu used it.
  key(e, text) {
    if (!this.open) return false;
    if (e.key === 'ArrowDown' || e.key === 'ArrowUp') {
      if (!this.items.length) return false;
      const n = this.items.length;
      this.sel = (this.sel + (e.key === 'ArrowDown' ? 1 : n - 1)) % n;
      this.render(text);
    } else if ((e.key === 'Enter' && !e.shiftKey) || e.key === 'Tab') {
      if (!this.items.length) return false;
      this.pick(this.sel);
    } else if (e.key === 'Escape') {
      this.closedFor = text;
      this.close();
    } else {
      return false;
    }
    e.preventDefault();
    e.stopPropagation();
    return true;
  }
}
