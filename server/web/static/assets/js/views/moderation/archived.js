// @ts-check
// views/moderation/archived.js: the archived channels (the API's channel list has them; the
// sidebar leaves them out), to open one and read it, and for the owner, to unarchive it. The
// API decides who may unarchive; its refusal is shown as it is.
import { h, replace, byName } from '../../dom.js';
import { state, touch } from '../../store.js';
import * as actions from '../../actions.js';
import { registerPanel } from '../registry.js';
import { isOwner, myRole, outcome } from './common.js';

const notes = new Map();

async function unarchive(c) {
  notes.delete(c.id);
  try {
    await actions.updateChannel(c.id, { archived: false });
    notes.set('', { said: `#${c.name} is back in the sidebar.` });
  } catch (e) {
    notes.set(c.id, { error: e.message });
  }
  touch('archived-view');
}

function render(body) {
  const list = [...state.channels.values()].filter((c) => c.archived).sort((a, b) => byName(a.name, b.name));
  replace(body,
    notes.has('') ? outcome(notes.get('')) : null,
    list.length ? h('ul', { class: 'people archived-list', role: 'list' }, ...list.map((c) => h('li', { dataset: { channel: c.id } },
      h('span', { class: 'who' }, h('span', { class: 'author' }, `#${c.name}`), c.display_title ? h('span', { class: 'muted' }, ` ${c.display_title}`) : null,
        notes.has(c.id) ? outcome(notes.get(c.id)) : null),
      h('button', { type: 'button', class: 'btn small', onclick: () => actions.openPlace({ kind: 'channel', id: c.id }) }, 'Open'),
      isOwner() ? h('button', { type: 'button', class: 'btn small primary', onclick: () => unarchive(c) }, 'Unarchive') : null)))
      : h('p', { class: 'muted pad' }, 'No archived channels.'),
    isOwner() ? null : h('p', { class: 'muted pad' }, 'Only the workspace owner can unarchive a channel.'));
}

registerPanel('archived', {
  title: 'Archived channels',
  topics: ['sidebar', 'channel', 'archived-view'],
  render(body, panel, { fresh }) {
    if (fresh) notes.clear();
    render(body);
  },
});
