// @ts-check
// views/signin.js is the sign-in view: magic link (with the development token flow when the
// server offers it), password when enabled, GitHub and OIDC when configured, and the local
// development identity after a sign-out.
import { h, replace } from '../dom.js';
import * as api from '../api.js';
import { state, setMe } from '../store.js';

export function renderSignIn(root, enter) {
  const a = state.auth;
  const status = h('p', { class: 'signin-status', role: 'status', 'aria-live': 'polite' });
  const fail = (e) => { status.textContent = e.message; status.classList.add('error'); };
  const say = (text) => { status.textContent = text; status.classList.remove('error'); };

  const consume = async (token) => {
    try {
      await api.post('/api/auth/magic/consume', { token: token.trim() }, { quiet401: true });
      setMe(null);
      await enter();
    } catch (e) { fail(e); }
  };

  const sections = [];
  if (state.me) {
    sections.push(h('div', { class: 'signin-block' },
      h('button', { class: 'btn primary wide', type: 'button', onclick: () => enter() }, `Continue as ${state.me.display_name || 'the local owner'}`),
      h('p', { class: 'hint' }, 'Development mode: this server signs local browsers in as its first account.')));
  }

  const email = h('input', { type: 'email', name: 'email', placeholder: 'you@example.com', required: true, autocomplete: 'email', 'aria-label': 'Email' });
  const name = h('input', { type: 'text', name: 'name', placeholder: 'Your name', autocomplete: 'name', 'aria-label': 'Name' });
  const tokenBox = h('div', { class: 'token-box' });
  const magic = h('form', { class: 'signin-block', onsubmit: async (e) => {
    e.preventDefault();
    if (a.email) {
      try {
        await api.post('/api/auth/magic/request', { email: email.value, display_name: name.value || email.value.split('@')[0] });
        say('Check your email: if this address may sign in here, a link is on its way.');
      } catch (err) { fail(err); }
      return;
    }
    if (!a.dev_auth) {
      say(`Check your email for a sign-in link. Operators can make one with: natter admin magic-link create --email ${email.value}`);
      return;
    }
    try {
      const res = await api.post('/api/auth/magic/request', { email: email.value, display_name: name.value || email.value.split('@')[0] });
      replace(tokenBox,
        h('p', { class: 'hint' }, 'Development: the server hands the magic-link token back instead of emailing it.'),
        h('code', { class: 'token' }, res.token),
        h('button', { class: 'btn primary wide', type: 'button', onclick: () => consume(res.token) }, 'Sign in with this link'));
    } catch (e) { fail(e); }
  } },
  h('h2', null, 'Sign in with email'), email, name,
  h('button', { class: 'btn primary wide', type: 'submit' }, a.dev_auth ? 'Get a magic link' : 'Email me a link'),
  tokenBox);
  sections.push(magic);

  const pasted = h('input', { type: 'text', placeholder: 'mgt_…', 'aria-label': 'Magic-link token', autocomplete: 'off' });
  sections.push(h('form', { class: 'signin-block compact', onsubmit: (e) => { e.preventDefault(); consume(pasted.value); } },
    h('label', null, 'Have a link token?', pasted), h('button', { class: 'btn', type: 'submit' }, 'Use token')));

  if (a.password) {
    const id = h('input', { type: 'text', placeholder: 'Email or handle', autocomplete: 'username', 'aria-label': 'Email or handle' });
    const pw = h('input', { type: 'password', placeholder: 'Password', autocomplete: 'current-password', 'aria-label': 'Password' });
    sections.push(h('form', { class: 'signin-block', onsubmit: async (e) => {
      e.preventDefault();
      try {
        await api.post('/api/auth/password/login', { identifier: id.value, password: pw.value }, { quiet401: true });
        setMe(null);
        await enter();
      } catch (err) { fail(err); }
    } }, h('h2', null, 'Sign in with a password'), id, pw, h('button', { class: 'btn primary wide', type: 'submit' }, 'Sign in')));
  }

  const providers = { github: 'Continue with GitHub', oidc: 'Continue with single sign-on' };
  const buttons = (a.providers || []).filter((p) => providers[p])
    .map((p) => h('a', { class: 'btn wide provider', href: `/api/auth/${p}/start` }, providers[p]));
  if (buttons.length) sections.push(h('div', { class: 'signin-block' }, ...buttons));

  // A link of the form /#token=mgt_… signs in directly.
  const hashToken = new URLSearchParams(location.hash.slice(1)).get('token');
  if (hashToken) { history.replaceState(null, '', '/'); consume(hashToken); }

  replace(root, h('main', { class: 'signin' },
    h('div', { class: 'signin-card' },
      h('div', { class: 'brand' }, h('img', { src: '/assets/icon.svg', alt: '', class: 'logo' }), h('h1', null, 'Natter')),
      h('p', { class: 'lede' }, 'Team chat that keeps up.'),
      ...sections, status)));
}
