// @ts-check
// views/privatechannel.js: private channels (issue 27) in the side panel: a private channel's
// members, to add someone, remove them or leave; and, for the owner and moderators, the
// workspace's private channels with their member counts, to archive one without reading it.
// The API decides who may; a refusal is shown with its own sentence.
import { h, replace, icon, displayName } from '../dom.js';
import { withPdot } from '../lazy/presence.js';
import { state, touch } from '../store.js';
import * as api from '../api.js';
import * as actions from '../actions.js';
import { registerPanel } from './registry.js';
import { isManager } from './moderation/common.js';

// note is the outcome of the last action of the members panel, kept across its redraws;
// picked is the person chosen in its "Add someone" list and not yet added, so that a redraw
// (a member joining, say) does not undo the choice between picking and pressing Add.
let note = { said: '', error: '' };
let picked = '';

const outcome = () => [
  note.error ? h('p', { class: 'error pad', role: 'alert' }, note.error) : null,
  note.said ? h('p', { class: 'muted pad', role: 'status' }, note.said) : null,
];

async function act(fn, said) {
  note = { said: '', error: '' };
  try {
    await fn();
    note.said = said;
  } catch (e) {
    note.error = e.message;
  }
  touch('channel-members');
}

// drawn counts the members panel's draws: an add and a removal can both start one, and the
// answers may come back in either order, so only the latest may draw.
let drawn = 0;

async function renderMembers(body, channelId) {
  const draw = ++drawn;
  const c = state.channels.get(channelId);
  if (!c) { replace(body, h('p', { class: 'muted pad' }, 'You are no longer in this channel.')); return; }
  let page;
  let directory;
  try {
    [page, directory] = await Promise.all([actions.channelMembers(channelId), actions.members('')]);
  } catch (e) {
    if (draw === drawn) replace(body, h('p', { class: 'error pad', role: 'alert' }, e.message));
    return;
  }
  // The panel may have moved on, or drawn again, while the calls were out.
  if (draw !== drawn || !state.panel || state.panel.kind !== 'channel-members' || state.panel.channelId !== channelId) return;
  const me = state.me && state.me.id;
  const inIt = new Set((page.members || []).map((m) => m.user.id));
  const candidates = (directory.members || []).filter((m) => !inIt.has(m.user.id) && m.role !== 'guest');
  const pick = h('select', { class: 'add-member', 'aria-label': 'Person or bot to add' },
    h('option', { value: '' }, 'Add someone…'),
    ...candidates.map((m) => h('option', { value: m.user.id }, displayName(m.user) + (m.user.kind === 'bot' ? ' (bot)' : ''))));
  if (candidates.some((m) => m.user.id === picked)) pick.value = picked;
  pick.addEventListener('change', () => { picked = pick.value; });
  const add = h('form', { class: 'row-btns pad', 'aria-label': 'Add to the channel',
    onsubmit: (e) => {
      e.preventDefault();
      const who = (directory.members || []).find((m) => m.user.id === pick.value);
      if (who) act(async () => { await actions.addChannelMember(channelId, who.user.id); picked = ''; }, `${displayName(who.user)} was added.`);
    } }, pick, h('button', { type: 'submit', class: 'btn primary' }, 'Add'));
  const row = (m) => h('li', { class: 'channel-member', dataset: { user: m.user.id } },
    withPdot(m.user),
    h('span', { class: 'who', role: 'button', tabIndex: 0, dataset: { card: m.user.id } }, h('span', { class: 'author' }, displayName(m.user)), m.user.kind === 'bot' ? h('span', { class: 'tag' }, 'bot') : null),
    m.user.id === me
      ? h('button', { type: 'button', class: 'btn small danger leave', onclick: () => act(() => actions.removeChannelMember(channelId, me), 'You left.') }, 'Leave')
      : isManager()
        ? h('button', { type: 'button', class: 'btn small remove', 'aria-label': `Remove ${displayName(m.user)}`,
          onclick: () => act(() => actions.removeChannelMember(channelId, m.user.id), `${displayName(m.user)} was removed.`) }, 'Remove')
        : null);
  replace(body,
    h('p', { class: 'muted pad' }, icon('lock'), ` #${c.name} is private: only the people and bots below read it.`),
    ...outcome(),
    h('ul', { class: 'people channel-members', role: 'list' }, ...(page.members || []).map(row)),
    typeof page.total_count === 'number' ? h('p', { class: 'muted pad' }, `${page.total_count} in this channel`) : null,
    add);
}

registerPanel('channel-members', {
  title: 'Channel members',
  topics: ['channel-members'],
  render(body, panel, { fresh }) {
    if (fresh) {
      note = { said: '', error: '' };
      picked = '';
    }
    renderMembers(body, panel.channelId);
  },
});

// The moderation view of private channels: that they exist, never what is said in them.
async function renderPrivate(body) {
  try {
    const res = await api.get(`/api/workspaces/${state.wsId}/moderation/channels`);
    const list = res.channels || [];
    replace(body, ...outcome(), list.length ? h('ul', { class: 'people private-list', role: 'list' }, ...list.map((c) => h('li', { dataset: { channel: c.id } },
      h('span', { class: 'sigil' }, icon('lock')),
      h('span', { class: 'who' }, h('span', { class: 'author' }, c.name), h('span', { class: 'muted' }, ` ${c.member_count} members`),
        c.archived ? h('span', { class: 'tag' }, 'archived') : null),
      h('button', { type: 'button', class: 'btn small', onclick: () => act(() => actions.updateChannel(c.id, { archived: !c.archived }).then(() => touch('private-view')),
        c.archived ? `#${c.name} was unarchived.` : `#${c.name} was archived.`) }, c.archived ? 'Unarchive' : 'Archive'))))
      : h('p', { class: 'muted pad' }, 'No private channels.'),
    h('p', { class: 'muted pad' }, 'You see that these channels exist; you read one only if its members add you.'));
  } catch (e) {
    replace(body, h('p', { class: 'error pad', role: 'alert' }, e.message));
  }
}

registerPanel('private-channels', {
  title: 'Private channels',
  topics: ['private-view', 'channel-members'],
  render(body, panel, { fresh }) {
    if (fresh) note = { said: '', error: '' };
    renderPrivate(body);
  },
});
