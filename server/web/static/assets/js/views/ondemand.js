// @ts-check
// views/ondemand.js: panels a menu entry, a key or a header button opens, whose code is fetched
// the first time one opens (registerLazyPanel), so a first visit does not load it: profile and
// account, notifications, keyboard shortcuts, and the private channels' panels. What they need
// from the start lives here: their menu entries, and notifications' part of opening the app
// (a notification's click, a page opened from one, a push device to register again).
import * as actions from '../actions.js';
import * as api from '../api.js';
import { state, subscribe, setMe } from '../store.js';
import { registerLazyPanel, registerMenuItem } from './registry.js';
import { isManager, myRole } from './moderation/common.js';

registerLazyPanel('profile', 'Profile and account', () => import('./profile.js'));
// run, not panel: a fresh object each time, so reopening starts from the saved profile.
registerMenuItem('me', { label: 'Profile and account', order: 10, run: () => actions.openPanel({ kind: 'profile' }) });

const notify = () => import('./notify.js');
registerLazyPanel('notifications', 'Notifications', notify);
registerMenuItem('me', { label: 'Notifications', order: 20, run: () => actions.openPanel({ kind: 'notifications' }) });

registerLazyPanel('shortcuts', 'Keyboard shortcuts', () => import('./shortcuts.js'));
registerMenuItem('me', { label: 'Keyboard shortcuts', order: 80, panel: { kind: 'shortcuts' } });

registerLazyPanel('members', 'People', () => import('../lazy/people.js'));

const privateChannels = () => import('./privatechannel.js');
registerLazyPanel('channel-members', 'Channel members', privateChannels);
const channels = () => import('../lazy/channels.js');
registerLazyPanel('browse', 'Browse channels', channels);
registerLazyPanel('channel-about', 'Channel details', channels);
registerLazyPanel('add-members', 'Add people', channels);
registerLazyPanel('private-channels', 'Private channels', privateChannels);
registerMenuItem('workspace', { label: 'Browse channels', order: 5, visible: () => myRole() !== 'guest', panel: { kind: 'browse' } });
registerMenuItem('workspace', { label: 'Private channels', order: 22, visible: isManager, panel: { kind: 'private-channels' } });

// once runs fn the first time ready() holds after a store update (this module loads before
// the person is known).
function once(ready, fn) {
  let done = false;
  const check = () => { if (!done && ready()) { done = true; fn(); } };
  subscribe(check);
  check();
}

// A person without a time zone (a first sign-in) gets the browser's, for their profile card.
once(() => state.me && state.phase === 'app', () => {
  const tz = Intl.DateTimeFormat().resolvedOptions().timeZone;
  if (!state.me.time_zone && tz) api.patch('/api/me', { time_zone: tz }).then((r) => setMe(r.user), () => {});
});

// openMessage answers a click on a notification: the message opens here when it is in the open
// workspace, otherwise the page goes to its workspace with the message named in the fragment.
function openMessage({ url, message: raw }) {
  const ws = state.workspaces.find((w) => w.id === state.wsId);
  const path = typeof url === 'string' && /^\/[A-Za-z0-9_-]+(\/[A-Za-z0-9_-]+)?$/.test(url) ? url : '/';
  const message = typeof raw === 'string' && /^[A-Za-z0-9_]+$/.test(raw) ? raw : '';
  if (message && ws && path.split('/')[1] === ws.route_id) actions.jumpTo(message).catch((e) => actions.toast(e.message));
  else location.assign(path + (message ? `#message=${encodeURIComponent(message)}` : ''));
}

// A page opened from a notification carries the message in its fragment: it opens once the
// workspace has its first place (and its socket), so the two do not race.
const fragment = /^#message=([A-Za-z0-9_]+)$/.exec(location.hash);
if (fragment) {
  history.replaceState(null, '', location.pathname + location.search);
  once(() => state.view && state.conn !== 'idle', () => actions.jumpTo(fragment[1]).catch((e) => actions.toast(e.message)));
}

if ('serviceWorker' in navigator && 'PushManager' in window && 'Notification' in window) {
  navigator.serviceWorker.addEventListener('message', (e) => { if (e.data && e.data.type === 'natter.open') openMessage(e.data); });
  // Only a browser that allowed notifications can hold a subscription to register again; after
  // the first place is shown, so the module, the worker and the status call do not compete
  // with the first paint.
  if (Notification.permission === 'granted') {
    once(() => state.phase === 'app' && state.me && state.view && state.conn !== 'idle', () => notify().then((m) => m.atOpen(), () => {}));
  }
}
