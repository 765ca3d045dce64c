// @ts-check
// views/moderation/index.js registers the moderation views (issue 16): the reader's own
// standing above the composer, and an invite link in the address, at once; the invites and
// joining with one, the directory with roles, timeouts, blocks, notes and ownership transfer,
// the guests' waiting room and the archived channels are fetched the first time one opens.
import { state, on, touch, subscribe } from '../../store.js';
import * as actions from '../../actions.js';
import { registerLazyPanel, registerMenuItem } from '../registry.js';
import { isManager, myRole } from './common.js';
import './standing.js';

registerLazyPanel('moderation', 'Members and moderation', () => import('./directory.js'));
registerLazyPanel('guests', 'Guests waiting', () => import('./guests.js'));
registerLazyPanel('archived', 'Archived channels', () => import('./archived.js'));
const invites = () => import('./invites.js');
registerLazyPanel('invites', 'Invites', invites);
registerLazyPanel('join', 'Join with an invite', invites);
registerMenuItem('workspace', { label: 'Members and moderation', order: 20, visible: isManager, panel: { kind: 'moderation' } });
registerMenuItem('workspace', { label: 'Guests waiting', order: 21, visible: isManager, panel: { kind: 'guests' } });
registerMenuItem('workspace', { label: 'Invites', order: 22, visible: isManager, panel: { kind: 'invites' } });
registerMenuItem('workspace', { label: 'Join with an invite', order: 90, panel: { kind: 'join' } });
registerMenuItem('workspace', { label: 'Show archived channels', order: 30, visible: () => myRole() !== 'guest', panel: { kind: 'archived' } });

const directoryChanged = () => { if (state.panel && state.panel.kind === 'moderation') touch('moderation'); };

// Other moderators' changes and people leaving show in the open views at once.
for (const type of ['member.moderation_updated', 'member.removed', 'workspace.ownership_transferred']) {
  on(type, () => { directoryChanged(); return ['guests']; });
}

// An invite link opened in the client is kept (through a sign-in) until someone is signed in
// and the workspace they landed in has loaded, then accepted once (invites.js, fetched then).
// A link opened in a page already showing the client changes only the hash: it counts too.
const KEY = 'natter.invite';
function takeLink() {
  const fromLink = new URLSearchParams(location.hash.slice(1)).get('invite');
  if (!fromLink) return;
  sessionStorage.setItem(KEY, fromLink);
  history.replaceState(null, '', location.pathname);
  touch('invite');
}
takeLink();
window.addEventListener('hashchange', takeLink);
let busy = false;
subscribe(() => {
  const token = sessionStorage.getItem(KEY);
  if (!token || busy || state.phase !== 'app' || !state.me || !document.querySelector('.shell')) return;
  if (state.workspaces.length && state.conn !== 'open') return;
  busy = true;
  sessionStorage.removeItem(KEY);
  invites().then((m) => m.accept(token)).catch((e) => actions.toast(`That invite did not work: ${e.message}`)).finally(() => { busy = false; });
});
