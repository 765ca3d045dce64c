// @ts-check
// views/profile.js: the person's own profile and account: display name, handle, avatar (a URL
// or an uploaded picture; initials when it cannot load), the password (only for an account
// that has one), and the signed-in sessions with "sign out everywhere else". The API checks
// every rule; its sentence is shown when it refuses, and nothing changes.
import { h, replace, avatar, fmt } from '../dom.js';
import * as api from '../api.js';
import { state, touch, rememberUser, setMe } from '../store.js';
import { registerPanel } from './registry.js';

const field = (label, input) => h('label', { class: 'field' }, h('span', null, label), input);

// outcome is a status line: said() and failed() set it.
function outcome() {
  const el = h('p', { class: 'muted', role: 'status' });
  return { el, said: (t) => { el.className = 'muted'; el.textContent = t; }, failed: (t) => { el.className = 'error'; el.textContent = t; } };
}

function adopt(user) {
  setMe(user);
  rememberUser(user);
  // The sidebar's own line and every message row show the new name and picture.
  touch('sidebar', 'messages', 'thread', 'profile');
}

function profileForm() {
  const me = state.me;
  const name = h('input', { type: 'text', name: 'display_name', value: me.display_name || '', autocomplete: 'name' });
  const handle = h('input', { type: 'text', name: 'handle', value: me.handle || '', placeholder: 'ana', autocomplete: 'username', spellcheck: false });
  const url = h('input', { type: 'url', name: 'avatar_url', value: me.avatar_url || '', placeholder: 'https://…' });
  // The time zone: any IANA name, suggested from the browser's list (the card shows local time).
  const zones = typeof Intl.supportedValuesOf === 'function' ? Intl.supportedValuesOf('timeZone') : [];
  const tz = h('input', { type: 'text', name: 'time_zone', value: me.time_zone || '', list: 'time-zones', placeholder: 'Europe/Paris', spellcheck: false, autocomplete: 'off' });
  const tzList = h('datalist', { id: 'time-zones' }, ...zones.map((z) => h('option', { value: z })));
  const preview = h('span', { class: 'profile-avatar' });
  const showPreview = () => replace(preview, avatar({ ...me, avatar_url: url.value.trim() }, 'lg'));
  url.addEventListener('change', showPreview);
  showPreview();
  const out = outcome();
  const file = h('input', { type: 'file', accept: 'image/*', hidden: true, 'aria-label': 'Upload a picture',
    onchange: async () => {
      const f = file.files[0];
      if (!f) return;
      // An upload belongs to a workspace: the picture is stored in the open one.
      if (!state.wsId) { out.failed('Open a workspace first: the picture is stored in it.'); return; }
      out.said('Uploading…');
      try {
        const up = await api.upload(state.wsId, f, api.nonce(), () => {});
        // avatar_url must be an http(s) URL: the upload's address on this server.
        url.value = new URL(up.url, location.origin).href;
        showPreview();
        out.said('Uploaded. Save to use it.');
      } catch (e) { out.failed(e.message); }
      file.value = '';
    } });
  const form = h('form', { class: 'settings', 'aria-label': 'Profile', onsubmit: async (e) => {
    e.preventDefault();
    const now = state.me;
    const patch = {};
    if (name.value.trim() !== (now.display_name || '')) patch.display_name = name.value.trim();
    if (handle.value.trim().replace(/^@/, '').toLowerCase() !== (now.handle || '')) patch.handle = handle.value.trim();
    if (url.value.trim() !== (now.avatar_url || '')) patch.avatar_url = url.value.trim();
    if (tz.value.trim() !== (now.time_zone || '')) patch.time_zone = tz.value.trim();
    if (!Object.keys(patch).length) { out.said('Nothing to change.'); return; }
    try {
      const user = (await api.patch('/api/me', patch)).user;
      adopt(user);
      // The fields show what the server kept (a handle lowercased, without its @).
      name.value = user.display_name || '';
      handle.value = user.handle || '';
      url.value = user.avatar_url || '';
      tz.value = user.time_zone || '';
      out.said('Saved.');
    } catch (err) { out.failed(err.message); }
  } },
  h('div', { class: 'profile-head' }, preview, h('div', null,
    h('button', { type: 'button', class: 'btn small', onclick: () => file.click() }, 'Upload a picture'),
    h('button', { type: 'button', class: 'btn small', onclick: () => { url.value = ''; showPreview(); } }, 'Remove picture'), file)),
  field('Display name', name),
  field('Handle (2–32 letters, digits, _ or -)', handle),
  field('Picture URL', url),
  field('Time zone', tz), tzList,
  h('div', { class: 'row-btns' }, h('button', { type: 'submit', class: 'btn primary' }, 'Save profile')),
  out.el);
  return form;
}

// passwordForm changes the password of an enrolled account; the server revokes every other
// session when it succeeds.
function passwordForm() {
  if (!state.me.password_enrolled) return h('p', { class: 'muted pad' }, 'This account signs in without a password.');
  const current = h('input', { type: 'password', name: 'current_password', autocomplete: 'current-password', required: true });
  const next = h('input', { type: 'password', name: 'new_password', autocomplete: 'new-password', required: true });
  const again = h('input', { type: 'password', name: 'confirm_password', autocomplete: 'new-password', required: true });
  const out = outcome();
  const form = h('form', { class: 'settings', 'aria-label': 'Password', onsubmit: async (e) => {
    e.preventDefault();
    if (next.value !== again.value) { out.failed('The two new passwords differ.'); return; }
    try {
      // A wrong current password is a 401 too: it must not read as the session having ended.
      await api.post('/api/auth/password/change', { current_password: current.value, new_password: next.value }, { quiet401: true });
      form.reset();
      out.said('Password changed. Your other sessions were signed out.');
      loadSessions();
    } catch (err) { out.failed(err.message); }
  } },
  h('h3', null, 'Password'),
  field('Current password', current), field('New password (8–256 characters)', next), field('New password again', again),
  h('div', { class: 'row-btns' }, h('button', { type: 'submit', class: 'btn' }, 'Change password')), out.el);
  return form;
}

const sessions = { list: null, error: '', said: '' };

async function loadSessions() {
  try { sessions.list = (await api.get('/api/me/sessions')).sessions || []; sessions.error = ''; } catch (e) { sessions.error = e.message; }
  touch('profile');
}

async function signOutElsewhere() {
  try {
    const res = await api.post('/api/me/sessions/revoke-others');
    sessions.said = res.revoked === 1 ? 'Signed out of 1 other session.' : `Signed out of ${res.revoked} other sessions.`;
  } catch (e) { sessions.error = e.message; }
  await loadSessions();
}

const methods = { magic_link: 'email link', password: 'password', github: 'GitHub', oidc: 'single sign-on', proxy: 'identity proxy' };

function sessionsSection() {
  const list = sessions.list;
  const others = list ? list.filter((s) => !s.current).length : 0;
  return h('section', { class: 'settings', 'aria-label': 'Sessions' }, h('h3', null, 'Where you are signed in'),
    !list ? h('p', { class: 'muted' }, 'Loading…') : h('ul', { class: 'sessions', role: 'list' }, ...list.map((s) => h('li', null,
      h('span', { class: 'author' }, `Signed in by ${methods[s.method] || s.method}`), s.current ? h('span', { class: 'tag' }, 'this browser') : null,
      h('span', { class: 'muted' }, ` · since ${fmt.full(new Date(s.created_at))}`)))),
    h('div', { class: 'row-btns' }, h('button', { type: 'button', class: 'btn', disabled: !others, onclick: signOutElsewhere }, 'Sign out everywhere else')),
    sessions.error ? h('p', { class: 'error', role: 'alert' }, sessions.error) : h('p', { class: 'muted', role: 'status' }, sessions.said));
}

let sessionsBox = null;
registerPanel('profile', {
  title: 'Profile and account',
  topics: ['profile'],
  render(body, panel, { fresh }) {
    // The forms are built once per opening (a redraw would lose what is being typed); only the
    // sessions are redrawn.
    if (fresh || !sessionsBox || !body.contains(sessionsBox)) {
      sessionsBox = h('div');
      const first = profileForm();
      replace(body, h('div', { class: 'profile' }, first, passwordForm(), sessionsBox,
        h('p', { class: 'muted pad' }, 'Light or dark follows your system’s appearance setting.')));
      sessions.said = '';
      sessions.list = null;
      loadSessions();
      first.querySelector('input[name=display_name]').focus();
    }
    replace(sessionsBox, sessionsSection());
  },
});
