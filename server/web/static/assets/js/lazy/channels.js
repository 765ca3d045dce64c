// @ts-check
// lazy/channels.js: a person's place among the workspace's channels (issue 30), fetched the first
// time one of its panels opens or a header button uses it: the channel browser (a page at a
// time, searched by the server, with member counts, Join and Open), a channel's details (star,
// mute, leave or join, its members) and the add-people dialog of an empty channel's "Invite
// people". Stars, mutes and left channels live on the server, so they follow the person to every
// device. The API decides who may; a refusal is shown with its own sentence.
import { h, replace, icon, displayName } from '../dom.js';
import { withPdot } from './presence.js';
import * as api from '../api.js';
import { state, touch } from '../store.js';
import * as actions from '../actions.js';
import { registerPanel } from '../views/registry.js';
import { isManager } from '../views/moderation/common.js';

// setChannelStanding merges what an answer says of a channel (the person's standing: joined,
// starred, notification_level) into the store, keeping the read state it does not carry.
export function setChannelStanding(c) {
  actions.mergeChannel(c);
  touch('sidebar', 'header', 'channel-about');
}

export async function join(id) {
  setChannelStanding((await api.post(`/api/channels/${id}/join`)).channel);
}

// leave takes the person out of a channel: a private one is gone from their client, a public one
// leaves the sidebar (it can still be opened and joined from the browser). Leaving the open
// channel moves to the default place.
export async function leave(id) {
  const c = state.channels.get(id);
  const res = await api.post(`/api/channels/${id}/leave`);
  if (c && c.visibility === 'private') { await actions.forgetChannel(id); return; }
  setChannelStanding(res.channel);
  if (state.view && state.view.id === id) {
    const next = actions.pickDefaultPlace();
    if (next) await actions.openPlace(actions.viewOf(next));
  }
}

export async function star(id, on) {
  await api.call(on ? 'PUT' : 'DELETE', `/api/channels/${id}/star`);
  setChannelStanding({ id, starred: on });
}

// toggleStar is the header's star button: it says so when the star could not be changed.
export function toggleStar(id) {
  const c = state.channels.get(id);
  return star(id, !(c && c.starred)).catch((e) => actions.toast(e.message));
}

// mute sets the level that silences a channel (no push, no email, no unread weight; mentions
// still show their badge); unmuting returns to the default, mentions.
export async function mute(id, on) {
  const res = await api.call('PUT', `/api/channels/${id}/notification-preference`, { level: on ? 'muted' : 'mentions' });
  setChannelStanding({ id, notification_level: res.notification_preference.level });
}

// note is the outcome of the last action of a panel, kept across its redraws.
let note = { said: '', error: '' };
const outcome = () => [
  note.error ? h('p', { class: 'error pad', role: 'alert' }, note.error) : null,
  note.said ? h('p', { class: 'muted pad', role: 'status' }, note.said) : null,
];
async function act(fn, said, topic) {
  note = { said: '', error: '' };
  try { await fn(); note.said = said; } catch (e) { note.error = e.message; }
  touch(topic);
}

// The browser: the server pages and searches (a workspace may have thousands of channels), so the
// panel holds only what it has been sent; a newer search drops the answer of an older one.
const browse = { q: '', items: [], cursor: '', more: false, error: '', seq: 0, input: null, out: null };

async function fetchPage(reset) {
  const seq = ++browse.seq;
  try {
    const res = await api.get(`/api/workspaces/${state.wsId}/channels/browse${api.q({ q: browse.q, cursor: reset ? '' : browse.cursor, limit: 50 })}`);
    if (seq !== browse.seq) return;
    browse.items = (reset ? [] : browse.items).concat(res.channels || []);
    browse.cursor = res.next_cursor || '';
    browse.more = !!res.has_more;
    browse.error = '';
  } catch (e) {
    if (seq === browse.seq) browse.error = e.message;
  }
  touch('browse');
}

let typed = 0;
function browseInput() {
  return h('input', { class: 'filter browse-q', type: 'search', placeholder: 'Search channels', 'aria-label': 'Search channels',
    oninput: (e) => {
      browse.q = e.target.value.trim();
      clearTimeout(typed);
      typed = setTimeout(() => fetchPage(true), 200);
    } });
}

function browseRow(item) {
  // The store knows the person's latest standing (a join made elsewhere in the page).
  const c = { ...item, ...(state.channels.get(item.id) || {}) };
  const joined = c.joined !== false;
  return h('li', { dataset: { channel: c.id } },
    h('span', { class: 'sigil', title: c.visibility === 'private' ? 'Private channel' : 'Public channel' }, icon(actions.sigilOf(c))),
    h('span', { class: 'who' },
      h('span', { class: 'author' }, c.name), c.display_title ? h('span', { class: 'muted' }, ` ${c.display_title}`) : null,
      h('br'), h('span', { class: 'muted browse-meta' }, `${item.member_count} ${item.member_count === 1 ? 'member' : 'members'}${joined ? ' · joined' : ''}`)),
    joined ? null : h('button', { type: 'button', class: 'btn small primary', 'aria-label': `Join #${c.name}`,
      onclick: () => act(() => join(c.id).then(() => fetchPage(true)), `You joined #${c.name}.`, 'browse') }, 'Join'),
    h('button', { type: 'button', class: 'btn small', 'aria-label': `Open #${c.name}`,
      onclick: () => actions.openPlace({ kind: 'channel', id: c.id }) }, 'Open'));
}

registerPanel('browse', {
  title: 'Browse channels',
  topics: ['browse', 'sidebar'],
  render(body, panel, { fresh }) {
    if (fresh) {
      note = { said: '', error: '' };
      Object.assign(browse, { q: '', items: [], cursor: '', more: false, error: '', input: browseInput(), out: h('div') });
      // The search box stays put across redraws, so typing in it is never interrupted.
      replace(body, browse.input, replace(browse.out, h('p', { class: 'muted pad' }, 'Loading…')));
      browse.input.focus();
      fetchPage(true);
      return;
    }
    const list = browse.items.length
      ? h('ul', { class: 'people browse-list', role: 'list' }, ...browse.items.map(browseRow))
      : h('p', { class: 'muted pad' }, browse.q ? `No channel matches “${browse.q}”.` : 'No channels yet.');
    if (browse.out.parentNode !== body) replace(body, browse.input, browse.out);
    replace(browse.out, ...outcome(),
      browse.error ? h('p', { class: 'error pad', role: 'alert' }, browse.error) : list,
      browse.more ? h('button', { type: 'button', class: 'btn small browse-more', onclick: () => fetchPage(false) }, 'More channels') : null);
  },
});

// A channel's details: what the person may do with it, and who is in it.
async function renderAbout(body, channelId) {
  const c = state.channels.get(channelId);
  if (!c) { replace(body, h('p', { class: 'muted pad' }, 'This channel is gone.')); return; }
  let page = null;
  try { page = await actions.channelMembers(channelId); } catch (e) { note.error = note.error || e.message; }
  if (!state.panel || state.panel.kind !== 'channel-about' || state.panel.channelId !== channelId) return;
  const joined = c.joined !== false;
  const muted = c.notification_level === 'muted';
  const btn = (label, cls, fn, said) => h('button', { type: 'button', class: `btn small ${cls}`, onclick: () => act(() => fn(), said, 'channel-about') }, label);
  replace(body,
    h('p', { class: 'pad' }, h('strong', null, `#${c.name}`), c.display_title ? h('span', { class: 'muted' }, ` ${c.display_title}`) : null),
    page && typeof page.total_count === 'number' ? h('p', { class: 'muted pad about-count' }, `${page.total_count} ${page.total_count === 1 ? 'member' : 'members'}`) : null,
    h('div', { class: 'row-btns pad' },
      btn(c.starred ? 'Unstar' : 'Star', 'star', () => star(c.id, !c.starred), c.starred ? 'Unstarred.' : 'Starred: it is at the top of the sidebar.'),
      btn(muted ? 'Unmute' : 'Mute', 'mute', () => mute(c.id, !muted), muted ? 'Unmuted.' : 'Muted: no notifications, mentions still show.'),
      btn('Add people', 'add', () => actions.openPanel({ kind: 'add-members', channelId: c.id }), ''),
      joined ? btn('Leave', 'danger leave', () => leave(c.id), `You left #${c.name}.`) : btn('Join', 'primary', () => join(c.id), `You joined #${c.name}.`)),
    ...outcome(),
    page ? h('ul', { class: 'people about-members', role: 'list' }, ...(page.members || []).map((m) => h('li', { dataset: { user: m.user.id } },
      withPdot(m.user), h('span', { class: 'who' }, h('span', { class: 'author' }, displayName(m.user))),
      m.user.kind === 'bot' ? h('span', { class: 'tag' }, 'bot') : null))) : null);
}

registerPanel('channel-about', {
  title: 'Channel details',
  topics: ['channel-about'],
  render(body, panel, { fresh }) {
    if (fresh) note = { said: '', error: '' };
    renderAbout(body, panel.channelId);
  },
});

// Add people: the directory searched by the server, each person marked when already in the
// channel (its own member list, searched the same way).
const adding = { q: '', seq: 0, input: null, out: null };

async function renderAdd(body, channelId) {
  const c = state.channels.get(channelId);
  if (!c) { replace(body, h('p', { class: 'muted pad' }, 'This channel is gone.')); return; }
  const seq = ++adding.seq;
  let people;
  let inIt;
  try {
    [people, inIt] = await Promise.all([actions.members(adding.q), api.get(`/api/channels/${channelId}/members${api.q({ q: adding.q, limit: 100 })}`)]);
  } catch (e) {
    replace(adding.out, h('p', { class: 'error pad', role: 'alert' }, e.message));
    return;
  }
  if (seq !== adding.seq || !state.panel || state.panel.kind !== 'add-members') return;
  const ins = new Set((inIt.members || []).map((m) => m.user.id));
  const row = (m) => h('li', { dataset: { user: m.user.id } }, withPdot(m.user),
    h('span', { class: 'who' }, h('span', { class: 'author' }, displayName(m.user)), m.user.handle ? h('span', { class: 'muted' }, ` @${m.user.handle}`) : null),
    ins.has(m.user.id) ? h('span', { class: 'tag' }, 'in channel')
      : h('button', { type: 'button', class: 'btn small primary', 'aria-label': `Add ${displayName(m.user)}`,
        onclick: () => act(() => actions.addChannelMember(channelId, m.user.id), `${displayName(m.user)} is in #${c.name}.`, 'add-members') }, 'Add'));
  const list = (people.members || []).filter((m) => m.role !== 'guest');
  if (adding.out.parentNode !== body) replace(body, adding.input, adding.out);
  replace(adding.out, ...outcome(),
    list.length ? h('ul', { class: 'people add-list', role: 'list' }, ...list.map(row)) : h('p', { class: 'muted pad' }, 'Nobody matches.'),
    isManager() ? h('p', { class: 'pad' }, 'Someone new? ', h('button', { type: 'button', class: 'btn small', onclick: () => actions.openPanel({ kind: 'invites' }) },
      'Invite people to the workspace')) : null);
}

registerPanel('add-members', {
  title: 'Add people',
  topics: ['add-members'],
  render(body, panel, { fresh }) {
    if (fresh) {
      note = { said: '', error: '' };
      adding.q = '';
      adding.input = h('input', { class: 'filter', type: 'search', placeholder: 'Find people', 'aria-label': 'Find people to add',
        oninput: (e) => { adding.q = e.target.value.trim(); clearTimeout(typed); typed = setTimeout(() => touch('add-members'), 200); } });
      adding.out = h('div');
      replace(body, adding.input, adding.out);
      adding.input.focus();
    }
    renderAdd(body, panel.channelId);
  },
});
