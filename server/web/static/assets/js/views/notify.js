// @ts-check
// views/notify.js: notifications. Web Push on this device (the service worker at /sw.js, the
// subscription made with the server's public_key and registered with the API), the devices
// of the account, the open channel's level (all, mentions, muted) and Pushover. The server's
// this_device and this_device_stale drive the button; a device under a retired server key
// registers again as soon as the app opens. Fetched when the panel first opens, or at start
// where the browser allows notifications; the menu entry and a notification's click are handled
// by views/ondemand.js.
import { h, replace } from '../dom.js';
import * as api from '../api.js';
import { setChannelStanding } from '../lazy/channels.js';
import { state, touch, setMe } from '../store.js';
import { registerPanel } from './registry.js';

const supported = 'serviceWorker' in navigator && 'PushManager' in window && 'Notification' in window;
const push = { status: null, sub: null, error: '', said: '', busy: false };

const b64url = (buf) => btoa(String.fromCharCode(...new Uint8Array(buf))).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
function keyBytes(b64) {
  const s = b64.replace(/-/g, '+').replace(/_/g, '/');
  return Uint8Array.from(atob(s + '='.repeat((4 - (s.length % 4)) % 4)), (c) => c.charCodeAt(0));
}
// device is how the API names a browser: the unpadded base64url SHA-256 of its endpoint.
const device = async (endpoint) => b64url(await crypto.subtle.digest('SHA-256', new TextEncoder().encode(endpoint)));

// label names this browser in the device list ("Chrome on Linux x86_64").
function label() {
  const ua = navigator.userAgent;
  const browser = (ua.match(/(Firefox|Edg|OPR|Chrome|Safari)\//) || [])[1] || 'Browser';
  return `${browser === 'Edg' ? 'Edge' : browser} on ${navigator.platform || 'this device'}`.slice(0, 120);
}

let registration = null;
function worker() {
  if (!registration) registration = navigator.serviceWorker.register('/sw.js').then(() => navigator.serviceWorker.ready);
  return registration;
}

// refresh reads the account's push status, asking whether this browser's subscription is one
// of its devices.
async function refresh() {
  const reg = await worker();
  push.sub = await reg.pushManager.getSubscription();
  push.status = await api.get(`/api/me/push${api.q({ device: push.sub ? await device(push.sub.endpoint) : '' })}`);
  touch('notify');
  return push.status;
}

// underKey says whether a subscription was made with the server's current key.
function underKey(sub, key) {
  const k = sub && sub.options && sub.options.applicationServerKey;
  return !!k && b64url(k) === key;
}

// enable asks for permission, subscribes with the server's key (a subscription under another
// key, e.g. one the server has since retired, is dropped first) and registers the device.
async function enable() {
  const st = await refresh();
  if (!st.enabled) throw new Error('Push notifications are turned off on this server.');
  if (await Notification.requestPermission() !== 'granted') throw new Error('Notifications are blocked for this site in the browser’s settings.');
  const reg = await worker();
  let sub = push.sub;
  if (sub && (st.this_device_stale || !underKey(sub, st.public_key))) { await sub.unsubscribe().catch(() => {}); sub = null; }
  if (!sub) sub = await reg.pushManager.subscribe({ userVisibleOnly: true, applicationServerKey: keyBytes(st.public_key) });
  await api.call('PUT', '/api/me/push/subscriptions', { ...sub.toJSON(), user_agent: label(), user_id: state.me.id });
  await refresh();
}

async function disable() {
  const sub = push.sub;
  if (sub) {
    await api.call('DELETE', '/api/me/push/subscriptions', { endpoint: sub.endpoint, user_id: state.me.id });
    await sub.unsubscribe().catch(() => {});
  }
  await refresh();
}

async function act(fn, said) {
  push.busy = true;
  push.error = '';
  push.said = '';
  touch('notify');
  try { await fn(); push.said = said; } catch (e) { push.error = e.message; }
  push.busy = false;
  touch('notify');
}

// atOpen runs when the app opens on a browser that allowed notifications (views/ondemand.js
// imports this module then): a device the server says is under a retired key registers again.
export async function atOpen() {
  if (!supported || !state.me) return;
  try {
    const st = await refresh();
    if (st.enabled && push.sub && st.this_device_stale && Notification.permission === 'granted') await act(enable, 'This device was registered again.');
  } catch (e) { push.error = e.message; touch('notify'); }
}

const levels = [['all', 'All messages'], ['mentions', 'Mentions of me'], ['muted', 'Nothing (muted)']];
const levelNote = { channelId: null, level: '', error: '' };

async function loadLevel(channelId) {
  levelNote.channelId = channelId;
  levelNote.level = '';
  levelNote.error = '';
  try { levelNote.level = (await api.get(`/api/channels/${channelId}/notification-preference`)).notification_preference.level; } catch (e) { levelNote.error = e.message; }
  touch('notify');
}

async function setLevel(channelId, level) {
  levelNote.error = '';
  try {
    levelNote.level = (await api.call('PUT', `/api/channels/${channelId}/notification-preference`, { level })).notification_preference.level;
    setChannelStanding({ id: channelId, notification_level: levelNote.level }); // the sidebar's mute styling
  } catch (e) { levelNote.error = e.message; }
  touch('notify');
}

function deviceSection() {
  const st = push.status;
  const section = (...kids) => h('section', { class: 'notify-block', 'aria-label': 'This device' }, h('h3', null, 'This device'), ...kids);
  if (!supported) return section(h('p', { class: 'muted' }, 'This browser cannot receive push notifications.'));
  if (!st) return section(h('p', { class: 'muted' }, 'Checking…'));
  if (!st.enabled) return section(h('p', { class: 'muted' }, 'Push notifications are turned off on this server.'));
  const on = st.this_device && !st.this_device_stale;
  const blocked = Notification.permission === 'denied';
  return section(
    h('p', { class: 'notify-state', role: 'status' }, on ? 'Notifications are on for this device.'
      : st.this_device_stale ? 'This device must register again (the server changed its key).'
        : blocked ? 'Notifications are blocked for this site in the browser’s settings.' : 'Notifications are off for this device.'),
    on ? h('button', { class: 'btn', disabled: push.busy, onclick: () => act(disable, '') }, 'Turn off on this device')
      : h('button', { class: 'btn primary notify-enable', disabled: push.busy || blocked, onclick: () => act(enable, '') }, 'Enable notifications on this device'),
    st.devices && st.devices.length ? h('ul', { class: 'devices', role: 'list', 'aria-label': 'Your devices' }, ...st.devices.map((d) => h('li', null,
      h('span', { class: 'author' }, d.label || 'A browser'), d.this_device ? h('span', { class: 'tag' }, 'this device') : null,
      h('span', { class: 'muted' }, d.last_success_at ? ` · last delivered ${new Date(d.last_success_at).toLocaleString()}`
        : ` · registered ${new Date(d.registered_at || d.created_at).toLocaleString()}`),
      d.failure_count ? h('span', { class: 'error' }, ` · ${d.failure_count} failed`) : null))) : null);
}

function channelSection() {
  const view = state.view;
  const block = (...kids) => h('section', { class: 'notify-block', 'aria-label': 'This conversation' }, ...kids);
  if (!view) return null;
  if (view.kind === 'dm') return block(h('h3', null, 'This conversation'), h('p', { class: 'muted' }, 'Direct messages always notify you.'));
  const c = state.channels.get(view.id);
  if (levelNote.channelId !== view.id) { loadLevel(view.id); return block(h('h3', null, `#${c ? c.name : ''}`), h('p', { class: 'muted' }, 'Loading…')); }
  return block(h('fieldset', { class: 'levels' }, h('legend', null, `Notify me in #${c ? c.name : ''} about`),
    ...levels.map(([value, text]) => h('label', null, h('input', { type: 'radio', name: 'level', value, checked: levelNote.level === value,
      onchange: () => setLevel(view.id, value) }), ` ${text}`))),
  levelNote.error ? h('p', { class: 'error', role: 'alert' }, levelNote.error) : null);
}

function pushoverSection() {
  const ns = (state.me && state.me.notification_settings) || {};
  const enabled = h('input', { type: 'checkbox', name: 'pushover_enabled', checked: !!ns.pushover_enabled });
  const key = h('input', { type: 'text', name: 'pushover_user_key', value: ns.pushover_user_key || '', maxLength: 30, autocomplete: 'off', spellcheck: false, 'aria-label': 'Pushover user key' });
  const out = h('p', { class: 'muted', role: 'status' });
  const form = h('form', { class: 'settings notify-block', 'aria-label': 'Pushover', onsubmit: async (e) => {
    e.preventDefault();
    out.className = 'muted';
    try {
      const res = await api.patch('/api/me', { notification_settings: { pushover_enabled: enabled.checked, pushover_user_key: key.value.trim() } });
      setMe(res.user);
      out.textContent = 'Saved.';
    } catch (err) { out.className = 'error'; out.textContent = err.message; }
  } },
  h('h3', null, 'Pushover'),
  h('label', { class: 'check' }, enabled, ' Also send my notifications to Pushover'),
  h('label', { class: 'field' }, h('span', null, 'Pushover user key (30 letters and digits)'), key),
  h('div', { class: 'row-btns' }, h('button', { type: 'submit', class: 'btn' }, 'Save Pushover')), out);
  return form;
}

// emailSection: missed-activity emails (on/off and the delay), when the server sends email.
function emailSection() {
  if (!state.auth || !state.auth.email) return null;
  const ns = (state.me && state.me.notification_settings) || {};
  const enabled = h('input', { type: 'checkbox', name: 'email_enabled', checked: ns.email_enabled !== false });
  const delays = [['off', 'Never'], ['2m', 'After 2 minutes'], ['15m', 'After 15 minutes'], ['1h', 'After 1 hour']];
  const delay = h('select', { name: 'email_delay', 'aria-label': 'Email me about unread messages' },
    ...delays.map(([value, text]) => h('option', { value, selected: (ns.email_delay || '2m') === value }, text)));
  const out = h('p', { class: 'muted', role: 'status' });
  return h('form', { class: 'settings notify-block', 'aria-label': 'Email', onsubmit: async (e) => {
    e.preventDefault();
    out.className = 'muted';
    try {
      const res = await api.patch('/api/me', { notification_settings: { email_enabled: enabled.checked, email_delay: delay.value } });
      setMe(res.user);
      out.textContent = 'Saved.';
    } catch (err) { out.className = 'error'; out.textContent = err.message; }
  } },
  h('h3', null, 'Email'),
  h('label', { class: 'check' }, enabled, ' Email me about mentions, direct messages and thread replies I have not read'),
  h('label', { class: 'field' }, h('span', null, 'Send after they stay unread'), delay),
  h('div', { class: 'row-btns' }, h('button', { type: 'submit', class: 'btn' }, 'Save email')), out);
}

let parts = null;
registerPanel('notifications', {
  title: 'Notifications',
  topics: ['notify', 'view'],
  render(body, panel, { fresh }) {
    // The Pushover form is built once per opening, so a redraw keeps what is being typed.
    if (fresh || !parts || !body.contains(parts.live)) {
      parts = { live: h('div'), pushover: pushoverSection(), email: emailSection() };
      replace(body, h('div', { class: 'notify' }, parts.live, parts.pushover, parts.email));
      if (supported) refresh().catch((e) => { push.error = e.message; touch('notify'); });
    }
    const note = push.error ? h('p', { class: 'error pad', role: 'alert' }, push.error) : push.said ? h('p', { class: 'muted pad', role: 'status' }, push.said) : null;
    replace(parts.live, deviceSection(), note, channelSection());
  },
});

