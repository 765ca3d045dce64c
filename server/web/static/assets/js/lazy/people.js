// @ts-check
// lazy/people.js is the People panel (the header's head count, the workspace menu's "People",
// the sidebar's "New message"), loaded the first time it opens: the workspace's directory, or,
// with a channel open, the people in that channel (public channels hold everyone but those who
// left), online people first with a green dot, a search over names and handles, and "Message"
// on each row. A click on a name or a picture opens the person's card (lazy/card.js). Only the
// rows near the panel's viewport are drawn (views/windowed.js): a page is 100 people (200 of a
// channel), and presence redraws it.
import { h, replace, avatar, displayName } from '../dom.js';
import * as api from '../api.js';
import { state, rememberUser } from '../store.js';
import * as actions from '../actions.js';
import { registerPanel } from '../views/registry.js';
import { WindowedList } from '../views/windowed.js';
import { ensure, dot, isOnline, styles } from './presence.js';

// shown is what the open panel lists: { scope: 'workspace' | channel id, q, res }.
let shown = null;
let lists = []; // the windowed lists drawn: online, offline
let rowH = 0; // px, measured on the first row drawn

async function load(body, panel, scope, q) {
  const channel = scope !== 'workspace' ? state.channels.get(scope) : null;
  shown = { scope, q, res: null, error: '' };
  draw(body, panel);
  try {
    const [res] = await Promise.all([
      channel ? channelMembers(channel.id, q) : actions.members(q),
      ensure().catch(() => {}),
    ]);
    if (shown && shown.scope === scope && shown.q === q) shown.res = res;
  } catch (e) {
    if (shown && shown.scope === scope && shown.q === q) shown.error = e.message;
  }
  if (state.panel === panel) draw(body, panel);
}

// channelMembers is the first 200 people of a channel matching q (public or private).
async function channelMembers(channelId, q) {
  const res = await api.get(`/api/channels/${channelId}/members${api.q({ q, limit: 200 })}`);
  for (const m of res.members || []) rememberUser(m.user);
  return res;
}

function row(m) {
  const u = m.user;
  const me = state.me && u.id === state.me.id;
  return h('li', { class: `person${isOnline(u.id) ? ' is-online' : ''}`, dataset: { user: u.id } },
    h('span', { class: 'avatar-wrap', dataset: { card: u.id } }, avatar(u, 'sm'), dot(u.id)),
    h('span', { class: 'who', role: 'button', tabIndex: 0, dataset: { card: u.id } }, h('span', { class: 'author' }, displayName(u)),
      u.handle ? h('span', { class: 'muted' }, ` @${u.handle}`) : null),
    h('span', { class: 'tag' }, u.kind === 'bot' ? 'bot' : m.role),
    h('button', { class: 'btn small', 'aria-label': `Message ${displayName(u)}`,
      onclick: () => actions.openDM(me ? [] : [u.id]).catch((e) => actions.toast(e.message)) }, 'Message'));
}

function draw(body, panel) {
  const s = shown;
  const channel = s.scope !== 'workspace' ? state.channels.get(s.scope) : null;
  const view = state.view;
  const input = h('input', { type: 'search', class: 'search wide', value: s.q, placeholder: 'Find people', 'aria-label': 'Find people',
    onkeydown: (e) => { if (e.key === 'Enter') load(body, panel, s.scope, input.value.trim()); } });
  const tab = (scope, label) => h('button', { type: 'button', class: `seg${s.scope === scope ? ' on' : ''}`, 'aria-pressed': String(s.scope === scope),
    onclick: () => { if (s.scope !== scope) load(body, panel, scope, input.value.trim()); } }, label);
  const openChannel = view && view.kind === 'channel' ? state.channels.get(view.id) : null;
  const tabs = openChannel ? h('div', { class: 'segmented pad', role: 'group', 'aria-label': 'Whose list' },
    tab('workspace', 'Everyone'), tab(openChannel.id, `In #${openChannel.name}`)) : null;
  if (!s.res) {
    replace(body, tabs, input, s.error ? h('p', { class: 'error pad', role: 'alert' }, s.error) : h('p', { class: 'muted pad' }, 'Loading…'));
    return;
  }
  const list = [...(s.res.members || [])];
  const online = list.filter((m) => isOnline(m.user.id));
  const offline = list.filter((m) => !isOnline(m.user.id));
  const total = typeof s.res.total_count === 'number' ? s.res.total_count : null;
  const byId = new Map(list.map((m) => [m.user.id, m]));
  lists = [];
  const windowed = (members) => {
    // Tab onto a row scrolls it into view: the rows after it are drawn at once.
    const ul = h('ul', { class: 'people', role: 'list', onfocusin: () => drawWindows(body) });
    lists.push(new WindowedList(ul, members.map((m) => m.user.id), (id) => row(byId.get(id)), rowH || 45));
    return ul;
  };
  watchScroll(body);
  replace(body, tabs, input,
    list.length ? null : h('p', { class: 'muted pad' }, s.q ? `Nobody matches “${s.q}”.` : 'Nobody here yet.'),
    online.length ? h('h3', { class: 'people-head' }, `Online — ${online.length}`) : null,
    online.length ? windowed(online) : null,
    offline.length ? h('h3', { class: 'people-head' }, `Offline — ${offline.length}`) : null,
    offline.length ? windowed(offline) : null,
    total !== null ? h('p', { class: 'muted pad' }, channel ? `${total} in #${channel.name}` : `${total} people`) : null);
  drawWindows(body);
  if (document.activeElement === document.body) input.focus();
}

// drawWindows draws each list's rows near the viewport, reading the layout once before any
// list writes (as the sidebar does); a first measurement moves the lists below it.
function drawWindows(body) {
  if (!lists.length || !lists[0].ul.isConnected) return;
  const top = body.scrollTop, height = body.clientHeight;
  let at = lists.map((l) => l.offset(body));
  lists.forEach((l, i) => {
    if (!l.measured && rowH) { l.rowH = rowH; l.measured = true; l.first = -1; }
    if (l.draw(body, { at: at[i], top, height })) at = lists.map((x) => x.offset(body));
    if (l.measured) rowH = l.rowH;
  });
}

let scroller = null;
function watchScroll(body) {
  if (scroller === body) return;
  scroller = body;
  let frame = 0;
  const redraw = () => { if (!frame) frame = requestAnimationFrame(() => { frame = 0; drawWindows(body); }); };
  body.addEventListener('scroll', redraw, { passive: true });
  window.addEventListener('resize', redraw);
}

registerPanel('members', {
  title: 'People',
  topics: ['presence'],
  render(body, panel, { fresh }) {
    styles();
    if (fresh || !shown) {
      const scope = panel.channelId && state.channels.has(panel.channelId) ? panel.channelId : 'workspace';
      load(body, panel, scope, '');
      return;
    }
    draw(body, panel);
  },
});
