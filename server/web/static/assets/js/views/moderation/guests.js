// @ts-check
// views/moderation/guests.js: the guests' waiting room as owners and moderators see it: every
// guest with the posts they have left today (three a day), and "Make member" to let them out
// of #guest. In #guest itself a line above the composer points managers here.
import { h, replace, displayName } from '../../dom.js';
import { withPdot } from '../../lazy/presence.js';
import * as api from '../../api.js';
import { state, touch, rememberUser } from '../../store.js';
import { registerPanel } from '../registry.js';
import { isManager, describe, outcome } from './common.js';

const view = { guests: [], notes: new Map(), error: '', loaded: false };

async function load() {
  const wsId = state.wsId;
  try {
    const res = await api.get(`/api/workspaces/${wsId}/moderation/members${api.q({ role: 'guest', limit: 200 })}`);
    if (wsId !== state.wsId) return;
    for (const m of res.members || []) rememberUser(m.user);
    view.guests = res.members || [];
    view.error = '';
  } catch (e) {
    view.error = e.message;
  }
  view.loaded = true;
  touch('guests-view');
}

async function promote(m) {
  try {
    await api.patch(`/api/workspaces/${state.wsId}/moderation/members/${m.user.id}`, { role: 'member' });
    view.notes.set(m.user.id, { said: `${displayName(m.user)} is now a member and sees every channel.` });
    view.guests = view.guests.filter((g) => g.user.id !== m.user.id);
  } catch (e) {
    view.notes.set(m.user.id, { error: e.message });
  }
  touch('guests-view');
}

function render(body) {
  const said = [...view.notes.entries()].filter(([id]) => !view.guests.some((g) => g.user.id === id)).map(([, n]) => outcome(n));
  replace(body,
    h('p', { class: 'muted pad' }, 'Guests see only #guest and may post three messages a day. Making one a member lets them into every channel.'),
    view.error ? h('p', { class: 'error pad', role: 'alert' }, view.error) : null,
    ...said,
    view.loaded && !view.guests.length ? h('p', { class: 'muted pad guests-empty' }, 'Nobody is waiting.') : null,
    h('ul', { class: 'people guest-list', role: 'list' }, ...view.guests.map((m) => h('li', { dataset: { user: m.user.id } },
      withPdot(m.user),
      h('span', { class: 'who' }, h('span', { class: 'author' }, displayName(m.user)), h('span', { class: 'mod-state' }, describe(m)),
        view.notes.has(m.user.id) ? outcome(view.notes.get(m.user.id)) : null),
      h('button', { class: 'btn small primary', onclick: () => promote(m) }, 'Make member')))));
}

registerPanel('guests', {
  title: 'Guests waiting',
  topics: ['guests', 'guests-view'],
  render(body, panel, { fresh, topics }) {
    if (fresh) { view.notes.clear(); view.loaded = false; view.guests = []; }
    if (fresh || topics.has('guests')) load();
    render(body);
  },
});
