// send.js sends messages and replies. Each send gets a nonce before it leaves, is shown at once
// as pending, and is retried with the same nonce after a network error, so the server keeps at
// most one message however many times it is sent.
import * as api from './api.js';
import { state, touch, conv, thread, upsertMessage, insertRoot } from './store.js';

const RETRIES = [500, 1500, 4000];

// send posts a root message to the open place, with an optional file uploaded first.
export function send(body, { file, quote } = {}) {
  const view = state.view;
  const path = view.kind === 'dm' ? `/api/dms/${view.id}/messages` : `/api/channels/${view.id}/messages`;
  const p = pending(body, quote);
  p.path = path;
  p.file = file;
  p.list = () => conv(view.id).pending;
  p.list().push(p);
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
    id: `local:${n}`, nonce: n, body, pending: true, failed: null, attempt: 0,
    quoted_message_id: quote ? quote.id : undefined, upload: null, progress: null,
    author: state.me, author_id: state.me.id, created_at: new Date().toISOString(), reactions: [], attachments: [],
  };
}

// retry sends a failed message again with its original nonce.
export function retry(p) {
  p.failed = null;
  p.attempt = 0;
  touch('messages', 'thread');
  deliver(p);
}

async function deliver(p) {
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
    if (e instanceof api.NetworkError && p.attempt < RETRIES.length) {
      setTimeout(() => deliver(p), RETRIES[p.attempt++]);
      return;
    }
    p.failed = e instanceof api.NetworkError ? 'Not sent — no connection.' : `Not sent — ${e.message}`;
    touch('messages', 'thread');
  }
}

function remove(p) {
  const list = p.list();
  const i = list.indexOf(p);
  if (i >= 0) list.splice(i, 1);
  touch('messages', 'thread', 'sidebar');
}
