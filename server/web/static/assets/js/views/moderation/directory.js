// @ts-check
// views/moderation/directory.js: the member directory as owners and moderators see it
// (GET …/moderation/members): each person's role, timeout with the time left, block and the
// moderators' note, with the controls the reader's role can use: change role, time out or lift,
// block or unblock, edit the note, and for the owner, hand the workspace over. The API decides;
// a refusal shows its own sentence on the person's row and nothing changes. Only the rows near
// the panel's viewport are drawn (views/windowed.js), and a person's controls are built when
// their row is opened: a page of 100 people is a dozen or two rows of a few elements (issue 24).
import { h, replace, displayName } from '../../dom.js';
import { withPdot } from '../../lazy/presence.js';
import * as api from '../../api.js';
import { state, touch, rememberUser } from '../../store.js';
import { registerPanel } from '../registry.js';
import { SizedList } from '../sizedlist.js';
import { isManager, isOwner, myRole, running, timeLeft, describe, outcome, rolesChanged } from './common.js';

// The durations offered for a timeout, in minutes (the API takes 1 minute to 365 days).
const DURATIONS = [[5, '5 minutes'], [15, '15 minutes'], [60, '1 hour'], [24 * 60, '1 day'], [7 * 24 * 60, '1 week']];

// view holds what the open directory shows, so a live update redraws it without a reload.
// sizes are the rows' heights by person, so a redraw keeps the scroll position.
const view = { key: '', members: [], next: '', q: '', role: '', open: new Set(), notes: new Map(), drafts: new Map(), lengths: new Map(),
  sizes: new Map(), confirm: null, error: '' };
let list = null; // the WindowedList drawn

// rolesFor is the roles the reader may give m (empty: no role control).
function rolesFor(m) {
  if (m.user.kind === 'bot' || m.role === 'bot' || m.role === 'owner') return [];
  const roles = isOwner() && m.user.kind !== 'bot' ? ['moderator', 'member', 'guest'] : ['member', 'guest'];
  return roles.includes(m.role) ? roles : [m.role, ...roles];
}

// mayAct says whether the reader may moderate m at all: nobody acts on themselves or the owner,
// and moderators leave other moderators alone.
function mayAct(m) {
  if (!state.me || m.user.id === state.me.id || m.role === 'owner') return false;
  return m.role !== 'moderator' || isOwner();
}

export async function loadMembers(more = false) {
  const wsId = state.wsId;
  const res = await api.get(`/api/workspaces/${wsId}/moderation/members${api.q({ q: view.q, role: view.role, limit: 100, cursor: more ? view.next : undefined })}`);
  if (wsId !== state.wsId) return;
  for (const m of res.members || []) rememberUser(m.user);
  view.members = more ? view.members.concat(res.members || []) : res.members || [];
  view.next = res.has_more ? res.next_cursor : '';
  view.error = '';
  touch('moderation-view');
}

// act sends one moderation change for m and keeps the answer (or the refusal) on m's row.
async function act(m, patch, said) {
  view.notes.set(m.user.id, { said: '', error: '' });
  try {
    const res = await api.patch(`/api/workspaces/${state.wsId}/moderation/members/${m.user.id}`, patch);
    view.members = view.members.map((x) => (x.user.id === m.user.id ? res.member : x));
    view.notes.set(m.user.id, { said });
    if ('moderation_note' in patch) view.drafts.delete(m.user.id);
  } catch (e) {
    view.notes.set(m.user.id, { error: e.message });
  }
  touch('moderation-view');
}

async function transfer(m) {
  view.confirm = null;
  view.notes.set(m.user.id, { said: '', error: '' });
  try {
    const res = await api.post(`/api/workspaces/${state.wsId}/transfer-ownership`, { user_id: m.user.id });
    view.notes.set(m.user.id, { said: `${displayName(m.user)} now owns ${res.workspace.name}; you are a moderator.` });
    await rolesChanged();
    await loadMembers();
  } catch (e) {
    view.notes.set(m.user.id, { error: e.message });
    touch('moderation-view');
  }
}

function controls(m) {
  const who = displayName(m.user);
  const out = [];
  const roles = rolesFor(m);
  if (roles.length) {
    const select = h('select', { 'aria-label': `Role of ${who}`, class: 'mod-role',
      onchange: () => act(m, { role: select.value }, `Now ${select.value}.`) },
    ...roles.map((r) => h('option', { value: r, selected: r === m.role }, r)));
    out.push(h('label', { class: 'mod-field' }, h('span', null, 'Role'), select));
  }
  if (running(m.timeout_until)) {
    out.push(h('div', { class: 'mod-field' }, h('span', null, `Timed out · ${timeLeft(m.timeout_until)} left`),
      h('button', { type: 'button', class: 'btn small', onclick: () => act(m, { clear_timeout: true }, 'Timeout lifted.') }, 'Lift timeout')));
  } else {
    // The length picked is kept through redraws (a live update may come before the click).
    const dur = h('select', { 'aria-label': `Timeout length for ${who}`, onchange: () => view.lengths.set(m.user.id, Number(dur.value)) },
      ...DURATIONS.map(([v, l]) => h('option', { value: v, selected: v === view.lengths.get(m.user.id) }, l)));
    out.push(h('div', { class: 'mod-field' }, h('span', null, 'Timeout'), dur,
      h('button', { type: 'button', class: 'btn small', onclick: () => act(m, { timeout_minutes: Number(dur.value) }, 'Timed out.') }, 'Time out')));
  }
  out.push(h('div', { class: 'mod-field' }, h('span', null, m.blocked_at ? 'Blocked' : 'Not blocked'), m.blocked_at
    ? h('button', { type: 'button', class: 'btn small', onclick: () => act(m, { blocked: false }, 'Unblocked.') }, 'Unblock')
    : h('button', { type: 'button', class: 'btn small danger', onclick: () => act(m, { blocked: true }, 'Blocked.') }, 'Block')));
  const note = h('textarea', { rows: 2, maxLength: 1000, 'aria-label': `Moderators' note on ${who}`, placeholder: 'Only owners and moderators see this',
    value: view.drafts.has(m.user.id) ? view.drafts.get(m.user.id) : m.moderation_note || '',
    oninput: () => view.drafts.set(m.user.id, note.value) });
  out.push(h('label', { class: 'mod-field column' }, h('span', null, 'Note'), note),
    h('div', { class: 'row-btns' }, h('button', { type: 'button', class: 'btn small', onclick: () => act(m, { moderation_note: note.value }, note.value.trim() ? 'Note saved.' : 'Note cleared.') }, 'Save note')));
  if (isOwner() && m.user.kind !== 'bot' && (m.role === 'member' || m.role === 'moderator')) {
    out.push(view.confirm === m.user.id
      ? h('div', { class: 'mod-field' }, h('span', null, `Make ${who} the owner? You become a moderator.`),
        h('button', { type: 'button', class: 'btn small danger', onclick: () => transfer(m) }, 'Transfer ownership'),
        h('button', { type: 'button', class: 'btn small', onclick: () => { view.confirm = null; touch('moderation-view'); } }, 'Cancel'))
      : h('div', { class: 'row-btns' }, h('button', { type: 'button', class: 'btn small', onclick: () => { view.confirm = m.user.id; touch('moderation-view'); } }, 'Make owner…')));
  }
  return out;
}

function row(m) {
  const id = m.user.id;
  const said = describe(m);
  const head = [withPdot(m.user),
    h('span', { class: 'who' }, h('span', { class: 'author' }, displayName(m.user)), m.user.handle ? h('span', { class: 'muted' }, ` @${m.user.handle}`) : null,
      said ? h('span', { class: `mod-state${m.blocked_at || running(m.timeout_until) ? ' warn' : ''}` }, said) : null,
      m.moderation_note ? h('span', { class: 'mod-note-text muted' }, `Note: ${m.moderation_note}`) : null),
    h('span', { class: `tag${m.role === 'bot' ? ' bot' : ''}` }, m.role)];
  const note = view.notes.get(id);
  if (!mayAct(m)) return h('li', { class: 'mod-member', dataset: { user: id } }, h('div', { class: 'mod-head' }, ...head), note ? outcome(note) : null);
  // The controls exist while the row is open: built on opening, dropped on closing.
  const box = h('div', { class: 'mod-controls' });
  const details = h('details', { open: view.open.has(id),
    ontoggle: () => {
      if (details.open) { view.open.add(id); if (!box.firstChild) replace(box, ...controls(m)); } else { view.open.delete(id); box.replaceChildren(); }
    } },
  h('summary', { class: 'mod-head', title: `Manage ${displayName(m.user)}` }, ...head), box);
  if (view.open.has(id)) replace(box, ...controls(m));
  return h('li', { class: 'mod-member', dataset: { user: id } }, details, note ? outcome(note) : null);
}

function render(body) {
  const search = h('input', { type: 'search', class: 'search wide', value: view.q, placeholder: 'Find people', 'aria-label': 'Find people',
    onkeydown: (e) => { if (e.key === 'Enter') { view.q = search.value.trim(); loadMembers().catch(fail); } } });
  const role = h('select', { 'aria-label': 'Show role', onchange: () => { view.role = role.value; loadMembers().catch(fail); } },
    ...['', 'owner', 'moderator', 'member', 'guest', 'bot'].map((r) => h('option', { value: r, selected: r === view.role }, r ? `${r}s` : 'Everyone')));
  const focused = focusOf(body);
  const byId = new Map(view.members.map((m) => [m.user.id, m]));
  // Tab onto a row scrolls it into view: the rows after it are drawn at once, before the next Tab.
  const ul = h('ul', { class: 'people mod-list', role: 'list', onfocusin: () => { if (list) list.draw(body); } });
  if (list) list.stop();
  list = new SizedList(ul, [...byId.keys()], (id) => row(byId.get(id)), 60, view.sizes);
  watchScroll(body);
  replace(body, h('div', { class: 'mod-tools' }, search, role),
    view.error ? h('p', { class: 'error pad', role: 'alert' }, view.error) : null,
    ul,
    view.next ? h('button', { class: 'btn wide', onclick: () => loadMembers(true).catch(fail) }, 'More people') : null,
    h('p', { class: 'muted pad' }, `You are ${myRole() === 'owner' ? 'the owner' : 'a moderator'}. ${isOwner() ? 'You may appoint moderators and hand the workspace over.' : 'Moderators act on members, guests and bots.'}`));
  list.draw(body);
  refocus(body, focused);
}

// The panel's body scrolls the directory: each scroll draws the rows come into view (once a frame).
let scroller = null;
function watchScroll(body) {
  if (scroller === body) return;
  scroller = body;
  let frame = 0;
  const draw = () => { if (!frame) frame = requestAnimationFrame(() => { frame = 0; if (list && list.ul.isConnected) list.draw(body); }); };
  body.addEventListener('scroll', draw, { passive: true });
  window.addEventListener('resize', draw);
}

// A redraw keeps the keyboard where it was: the same control (by its label, else its kind and
// text) in the same person's row.
function focusOf(body) {
  const el = document.activeElement;
  if (!el || !body.contains(el)) return null;
  const li = el.closest('[data-user]');
  return { user: li ? /** @type {HTMLElement} */ (li).dataset.user : '', label: el.getAttribute('aria-label'), tag: el.tagName.toLowerCase(), text: el.textContent };
}

function refocus(body, f) {
  if (!f) return;
  const scope = f.user ? body.querySelector(`li[data-user="${CSS.escape(f.user)}"]`) : body;
  if (!scope) return;
  const again = f.label ? scope.querySelector(`[aria-label="${CSS.escape(f.label)}"]`)
    : [...scope.querySelectorAll(f.tag)].find((el) => el.textContent === f.text);
  if (again) /** @type {HTMLElement} */ (again).focus();
}

function fail(e) { view.error = e.message; touch('moderation-view'); }

registerPanel('moderation', {
  title: 'Members and moderation',
  topics: ['moderation', 'moderation-view', 'moderation-clock'],
  render(body, panel, { fresh, topics }) {
    const moved = view.key !== state.wsId;
    if (fresh || moved) {
      view.key = state.wsId;
      view.members = [];
      view.notes.clear();
      view.sizes.clear();
      view.confirm = null;
      view.q = panel.q || '';
      view.role = panel.role || '';
    }
    if (fresh || moved || topics.has('moderation')) loadMembers().catch(fail);
    render(body);
  },
});

// The time left counts down while the panel is open.
setInterval(() => {
  if (state.panel && state.panel.kind === 'moderation' && view.members.some((m) => running(m.timeout_until) || m.timeout_until)) touch('moderation-clock');
}, 15000);
