// @ts-check
// send.js sends messages and replies. Each send gets a nonce before it leaves, is shown at once
// as pending, and is retried with the same nonce after a network error, so the server keeps at
// most one message however many times it is sent. Without a network a message waits and goes
// by itself when the connection returns; one the server refuses can be edited or discarded.
// Unsent root messages are kept in localStorage until sent or discarded, so a reload keeps them.
import * as api from './api.js';
import { state, touch, conv, thread, upsertMessage, insertRoot } from './store.js';

const RETRIES = [500, 1500, 4000];
const KEPT = 'natter.unsent';

// send posts a root message to the open place, with an optional file uploaded first. The row
// stays after the message that was last when it was written, so later ones go below it.
export function send(body, { file = null, quote = null } = {}) {
  const view = state.view;
  const c = conv(view.id);
  const p = pending(body, quote);
  p.path = view.kind === 'dm' ? `/api/dms/${view.id}/messages` : `/api/channels/${view.id}/messages`;
  p.place = view.id;
  p.after = c.hasNewer ? null : c.ids[c.ids.length - 1] || null;
  p.file = file;
  p.list = () => conv(view.id).pending;
  p.list().push(p);
  c.toBottom = true; // the list shows what was just written
  keep(p);
  touch('messages');
  deliver(p);
}

// sendReply posts a reply in a thread.
export function sendReply(rootId, body) {
  const p = pending(body, null);
  p.path = `/api/messages/${rootId}/thread/replies`;
  p.list = () => thread(rootId).pending;
  p.reply = true;
  p.list().push(p);
  touch('thread');
  deliver(p);
}

function pending(body, quote) {
  const n = api.nonce();
  return {
    id: `local:${n}`, nonce: n, body, pending: true, failed: null, refused: false, waiting: false, attempt: 0,
    quoted_message_id: quote ? quote.id : undefined, upload: null, progress: null,
    author: state.me, author_id: state.me.id, created_at: new Date().toISOString(), reactions: [], attachments: [],
  };
}

// retry sends a failed message again with its original nonce.
export function retry(p) {
  p.failed = null;
  p.waiting = false;
  p.attempt = 0;
  touch('messages', 'thread');
  deliver(p);
}

// discard drops an unsent message for good (Edit discards it after handing its text back).
export function discard(p) {
  remove(p);
}

// resendWaiting sends every message that waited for the network; the connection is back.
export function resendWaiting() {
  for (const list of [...[...state.convs.values()].map((c) => c.pending), ...[...state.threads.values()].map((t) => t.pending)]) {
    for (const p of list) if (p.waiting) retry(p);
  }
}

async function deliver(p) {
  if (!navigator.onLine) { wait(p); return; }
  try {
    if (p.file && !p.upload) {
      p.upload = await api.upload(state.wsId, p.file, `${p.nonce}-file`, (f) => { p.progress = f; touch('messages'); });
      p.attachments = [p.upload];
    }
    const res = await api.post(p.path, {
      body: p.body, nonce: p.nonce, quoted_message_id: p.quoted_message_id, upload_id: p.upload ? p.upload.id : undefined,
    });
    const m = upsertMessage(res.message, true);
    if (p.reply) {
      const t = thread(m.thread_root_id);
      if (!t.ids.includes(m.id)) t.ids.push(m.id);
      const root = state.messages.get(m.thread_root_id);
      if (root && res.thread_state) state.messages.set(root.id, { ...root, thread_state: res.thread_state });
    } else {
      insertRoot(m);
    }
    remove(p);
  } catch (e) {
    if (e instanceof api.NetworkError) {
      if (navigator.onLine && p.attempt < RETRIES.length) { setTimeout(() => deliver(p), RETRIES[p.attempt++]); return; }
      wait(p);
      return;
    }
    // A refusal (4xx other than a timeout or a rate limit) would be refused again: no Retry.
    p.refused = e instanceof api.ApiError && e.status >= 400 && e.status < 500 && e.status !== 408 && e.status !== 429;
    p.failed = `Not sent — ${e.message}`;
    keep(p);
    touch('messages', 'thread');
  }
}

// wait marks a message as held until the network returns (resendWaiting).
function wait(p) {
  p.waiting = true;
  p.failed = null;
  touch('messages', 'thread');
}

function remove(p) {
  const list = p.list();
  const i = list.indexOf(p);
  if (i >= 0) list.splice(i, 1);
  forget(p);
  touch('messages', 'thread', 'sidebar');
}

function kept() {
  try { return JSON.parse(localStorage.getItem(KEPT) || '[]'); } catch { return []; }
}

// keep stores a root message's text until it is sent or discarded; one with a file is not kept
// (the file cannot be).
function keep(p) {
  if (p.reply || !p.place || p.file) return;
  const rest = kept().filter((k) => k.nonce !== p.nonce);
  rest.push({ ws: state.wsId, place: p.place, path: p.path, nonce: p.nonce, body: p.body, after: p.after,
    quoted_message_id: p.quoted_message_id, created_at: p.created_at, failed: p.failed, refused: p.refused });
  try { localStorage.setItem(KEPT, JSON.stringify(rest)); } catch { /* storage full: the row stays in this page */ }
}

function forget(p) {
  const all = kept();
  const rest = all.filter((k) => k.nonce !== p.nonce);
  if (rest.length !== all.length) localStorage.setItem(KEPT, JSON.stringify(rest));
}

// restoreUnsent puts back the messages of a place that were not sent before the page closed:
// each shows as not sent (one that did reach the server is kept once by its nonce on Retry).
export function restoreUnsent(placeId) {
  const c = conv(placeId);
  for (const k of kept()) {
    if (k.ws !== state.wsId || k.place !== placeId || c.pending.some((p) => p.nonce === k.nonce)) continue;
    const p = { ...pending(k.body, null), ...k, id: `local:${k.nonce}`, list: () => conv(placeId).pending };
    p.failed = k.failed || 'Not sent — the page was closed before it was sent.';
    c.pending.push(p);
  }
}
