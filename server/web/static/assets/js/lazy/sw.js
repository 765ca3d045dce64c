// @ts-check
// sw.js is the client's service worker, served at /sw.js so its scope is every page. It shows
// the notifications the server pushes (the browser has decrypted them: RFC 8291) and, on a
// click, opens the message. It is a classic script: it shares no module with the page.
'use strict';

// self, as the service worker scope it is (the checker's worker library types it as any worker).
const sw = /** @type {ServiceWorkerGlobalScope} */ (/** @type {unknown} */ (self));

sw.addEventListener('install', () => sw.skipWaiting());
sw.addEventListener('activate', (event) => event.waitUntil(sw.clients.claim()));

// A push payload is {user_id, title, body, tag, url}; tag is the message id, so a message
// shows once on a device however often it is pushed.
sw.addEventListener('push', (event) => {
  let p = {};
  try { p = event.data ? event.data.json() : {}; } catch { p = {}; }
  event.waitUntil(showPush(p));
});

function showPush(p) {
  const title = typeof p.title === 'string' && p.title ? p.title : 'Natter';
  const message = typeof p.tag === 'string' ? p.tag : '';
  return sw.registration.showNotification(title, {
    body: typeof p.body === 'string' ? p.body : '',
    tag: message || undefined,
    icon: '/assets/icon.svg',
    data: { url: samePath(p.url), message, user_id: p.user_id || '' },
  });
}

// samePath keeps a target on this origin: a path of route ids, never another site.
function samePath(url) {
  return typeof url === 'string' && /^\/[A-Za-z0-9_-]+(\/[A-Za-z0-9_-]+)?$/.test(url) ? url : '/';
}

// openMessage takes a person to a notification's message: an open page of the client is told
// to open it (and focused), otherwise a new page opens at the conversation with the message
// named in the fragment. The click handler calls it; it is a function of its own so that what a
// click does can be exercised where no real click on a notification can be made.
async function openMessage(data) {
  const url = samePath(data.url);
  const message = typeof data.message === 'string' ? data.message : '';
  const pages = await sw.clients.matchAll({ type: 'window', includeUncontrolled: true });
  const page = pages.find((c) => new URL(c.url).origin === sw.location.origin);
  if (page) {
    page.postMessage({ type: 'natter.open', url, message });
    // Focusing is allowed only while handling the click itself.
    try { await page.focus(); } catch { /* the page is told anyway */ }
    return 'posted';
  }
  await sw.clients.openWindow(url + (message ? `#message=${encodeURIComponent(message)}` : ''));
  return 'opened';
}

sw.addEventListener('notificationclick', (event) => {
  event.notification.close();
  event.waitUntil(openMessage(event.notification.data || {}));
});
