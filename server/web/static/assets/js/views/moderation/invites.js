// @ts-check
// views/moderation/invites.js: invites. Owners and moderators create one (role and lifetime),
// see its link once (the server keeps only a hash of the token) with a Copy button, list the
// open ones and revoke them. Anyone can join with a link: opened in the client (/#invite=ivt_…),
// now or after signing in, it joins the workspace and opens it; "Join with an invite" takes a
// pasted link or token.
import { h, replace, displayName } from '../../dom.js';
import * as api from '../../api.js';
import { state, touch, setWorkspaces } from '../../store.js';
import * as actions from '../../actions.js';
import { registerPanel } from '../registry.js';
import { isOwner, timeLeft, outcome } from './common.js';

const LIFETIMES = [[1, '1 hour'], [24, '1 day'], [168, '7 days'], [720, '30 days']];
const view = { invites: [], created: null, note: {}, copied: false, loaded: false, role: 'member', hours: 168 };

export const inviteLink = (token) => `${location.origin}/#invite=${encodeURIComponent(token)}`;

async function load() {
  const wsId = state.wsId;
  try {
    const res = await api.get(`/api/workspaces/${wsId}/invites`);
    if (wsId !== state.wsId) return;
    view.invites = res.invites || [];
  } catch (e) {
    view.note = { error: e.message };
  }
  view.loaded = true;
  touch('invites-view');
}

async function create(role, hours) {
  view.note = {};
  view.created = null;
  view.copied = false;
  try {
    const res = await api.post(`/api/workspaces/${state.wsId}/invites`, { role, expires_in_hours: hours });
    view.created = res.invite;
    await load();
    return;
  } catch (e) {
    view.note = { error: e.message };
  }
  touch('invites-view');
}

async function revoke(inv) {
  view.note = {};
  try {
    await api.del(`/api/workspaces/${state.wsId}/invites/${inv.id}`);
    if (view.created && view.created.id === inv.id) view.created = null;
    view.note = { said: `The ${inv.role} invite is revoked; its link no longer works.` };
    await load();
    return;
  } catch (e) {
    view.note = { error: e.message };
  }
  touch('invites-view');
}

async function copy(text, input) {
  try {
    await navigator.clipboard.writeText(text);
  } catch {
    // Without clipboard permission the link is selected for Ctrl+C.
    input.select();
    document.execCommand('copy');
  }
  view.copied = true;
  touch('invites-view');
}

function render(body) {
  // The choices are kept through redraws (the list may arrive after the person picked).
  const role = h('select', { name: 'role', 'aria-label': 'Invite as', onchange: () => { view.role = role.value; } },
    ...['member', 'guest', ...(isOwner() ? ['moderator'] : [])].map((r) => h('option', { value: r, selected: r === view.role }, r)));
  const life = h('select', { name: 'expires', 'aria-label': 'Invite expires after', onchange: () => { view.hours = Number(life.value); } },
    ...LIFETIMES.map(([v, l]) => h('option', { value: v, selected: v === view.hours }, l)));
  const form = h('form', { class: 'settings', 'aria-label': 'New invite', onsubmit: (e) => { e.preventDefault(); create(role.value, Number(life.value)); } },
    h('label', { class: 'field' }, h('span', null, 'Invite as'), role),
    h('label', { class: 'field' }, h('span', null, 'Expires after'), life),
    h('div', { class: 'row-btns' }, h('button', { type: 'submit', class: 'btn primary' }, 'Create invite link')));
  let created = null;
  if (view.created) {
    const link = inviteLink(view.created.token);
    const input = h('input', { type: 'text', readOnly: true, value: link, class: 'invite-link', 'aria-label': 'Invite link', onfocus: () => input.select() });
    created = h('div', { class: 'invite-new', role: 'group', 'aria-label': 'The new invite' },
      h('p', null, `A single-use ${view.created.role} invite, valid for ${timeLeft(view.created.expires_at)}. Copy it now: it is not shown again.`),
      h('div', { class: 'row-btns' }, input, h('button', { type: 'button', class: 'btn', onclick: () => copy(link, input) }, view.copied ? 'Copied' : 'Copy link')));
  }
  const list = view.invites.map((inv) => h('li', { dataset: { invite: inv.id } },
    h('span', { class: 'who' }, h('span', { class: 'tag' }, inv.role),
      h('span', { class: 'muted' }, ` by ${displayName(state.users.get(inv.created_by))} · expires in ${timeLeft(inv.expires_at)}`)),
    inv.role === 'moderator' && !isOwner() ? null
      : h('button', { type: 'button', class: 'btn small danger', onclick: () => revoke(inv) }, 'Revoke')));
  replace(body, form, created, view.note.said || view.note.error ? outcome(view.note) : null,
    h('h3', { class: 'pad sub' }, 'Open invites'),
    view.loaded && !list.length ? h('p', { class: 'muted pad' }, 'No open invites.') : h('ul', { class: 'people invite-list', role: 'list' }, ...list));
}

registerPanel('invites', {
  title: 'Invites',
  topics: ['invites-view'],
  render(body, panel, { fresh }) {
    if (fresh) { Object.assign(view, { created: null, note: {}, loaded: false, role: 'member', hours: 168 }); load(); }
    render(body);
  },
});

// tokenOf takes an invite link or a bare token.
function tokenOf(text) {
  const t = text.trim();
  const m = /[#&?]invite=([^&\s]+)/.exec(t);
  return m ? decodeURIComponent(m[1]) : t;
}

// accept joins with token and opens the workspace joined.
export async function accept(token) {
  const res = await api.post('/api/invites/accept', { token });
  const list = await api.get('/api/workspaces');
  setWorkspaces(list.workspaces || []);
  await actions.openWorkspace(res.workspace.id);
  actions.toast(`You are in ${res.workspace.name} as ${res.member.role}.`);
  return res;
}

const join = { note: {} };
registerPanel('join', {
  title: 'Join with an invite',
  topics: ['join-view'],
  render(body, panel, { fresh }) {
    if (fresh) join.note = {};
    const input = h('input', { type: 'text', name: 'invite', placeholder: 'https://…/#invite=ivt_…', 'aria-label': 'Invite link or token', autocomplete: 'off' });
    replace(body, h('form', { class: 'settings', onsubmit: async (e) => {
      e.preventDefault();
      try { await accept(tokenOf(input.value)); } catch (err) { join.note = { error: err.message }; touch('join-view'); }
    } }, h('label', { class: 'field' }, h('span', null, 'Invite link or token'), input),
    h('div', { class: 'row-btns' }, h('button', { type: 'submit', class: 'btn primary' }, 'Join'))),
    outcome(join.note));
    if (fresh) input.focus();
  },
});
