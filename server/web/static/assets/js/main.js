// @ts-check
// main.js starts the client: it reads what the page says about the server, finds out who is
// signed in, and shows either the sign-in view or the workspace.
import * as api from './api.js';
import { state, touch, subscribe } from './store.js';
import { openWorkspace } from './actions.js';
import { pickWorkspace } from './boot.js';
import { mountShell } from './views/shell.js';
import { fmt, setRemoteAvatars } from './dom.js';

const root = document.getElementById('app');

function meta(name) {
  const el = document.querySelector(`meta[name="${name}"]`);
  return el ? /** @type {HTMLMetaElement} */ (el).content : '';
}

let workspaces = null; // the list requested at boot, used once

async function boot() {
  state.version = meta('natter-version');
  try { state.auth = { ...state.auth, ...JSON.parse(meta('natter-auth')) }; } catch { /* defaults */ }
  setRemoteAvatars(state.auth.remote_avatars);
  api.setUnauthenticatedHandler(() => { state.phase = 'signin'; touch('phase'); });
  subscribe((topics) => { if (topics.has('phase')) show(); });
  let me = null;
  // Both were started by boot.js at once: the workspace list is needed as soon as the person is known.
  workspaces = api.get('/api/workspaces', { quiet401: true });
  workspaces.catch(() => {});
  try { me = (await api.get('/api/me', { quiet401: true })).user; } catch { me = null; }
  state.me = me;
  // After signing out, the development fallback would sign the person straight back in; the
  // sign-in view offers it as a choice instead. A magic link in the address (/#token=…) wins
  // over whoever the browser already is (the development owner included): the sign-in view
  // consumes it.
  const linkToken = new URLSearchParams(location.hash.slice(1)).get('token');
  if (!me || linkToken || localStorage.getItem('natter.signedOut') === '1') {
    state.phase = 'signin';
    show();
    return;
  }
  await enter();
}

// enter shows the workspace the address names, else the last one used, else the first.
export async function enter() {
  localStorage.removeItem('natter.signedOut');
  if (!state.me) state.me = (await api.get('/api/me')).user;
  state.phase = 'app';
  const res = await (workspaces || api.get('/api/workspaces')).catch(() => api.get('/api/workspaces'));
  workspaces = null;
  state.workspaces = res.workspaces || [];
  if (!state.workspaces.length) { show(); touch('sidebar', 'messages'); return; }
  const { ws, byRoute } = pickWorkspace(state.workspaces);
  const placeRoute = location.pathname.split('/')[2];
  // The place's route id is matched against the listings the workspace loads anyway.
  const opening = openWorkspace(ws.id, null, byRoute ? placeRoute : null);
  // Its first calls are out: build the page and the date formatters (the locale's data) while
  // they are, rather than before.
  show();
  fmt.warm();
  await opening;
}

let mounted = null;
function show() {
  if (state.phase === 'signin') {
    mounted = 'signin';
    // Fetched only for someone signed out: a signed-in first visit does not load it.
    import('./views/signin.js').then((m) => { if (state.phase === 'signin') m.renderSignIn(root, enter); }, failed);
  } else if (state.phase === 'app' && mounted !== 'app') {
    mounted = 'app';
    mountShell(root);
  }
}

function failed(e) {
  root.replaceChildren();
  const p = document.createElement('p');
  p.className = 'boot';
  p.textContent = `Natter could not start: ${e.message}`;
  root.appendChild(p);
}

boot().catch(failed);
