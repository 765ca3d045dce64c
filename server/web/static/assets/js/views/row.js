// @ts-check
// views/row.js draws one message: author, time, body (through the Markdown renderer), quote,
// attachments, reactions, thread summary, pending state, and the actions that appear on hover
// and keyboard focus.
import { h, icon, avatar, displayName, fmt } from '../dom.js';
import { render as markdown } from '../markdown.js';
import { state, mentionsMe, setEditing, setEditDraft, setQuote } from '../store.js';
import { bodyOf } from './body.js';
import * as actions from '../actions.js';
import { kindRenderer, rowPartsOf } from './registry.js';
import { previewButton } from './preview.js';

// renderRow builds the row for m; opts: grouped, day (a divider before it), unreadLine, inThread.
export function renderRow(m, opts) {
  const author = state.users.get(m.author_id) || m.author;
  const created = new Date(m.created_at);
  const mine = state.me && m.author_id === state.me.id;
  const deleted = !!m.deleted_at;
  const toMe = !mine && !deleted && mentionsMe(m.body);
  const row = h('div', { class: `msg${m.kind && m.kind !== 'message' ? ` kind-${m.kind}` : ''}${opts.grouped ? ' grouped' : ''}${m.pending ? ' pending' : ''}${m.failed ? ' failed' : ''}${opts.highlight ? ' highlight' : ''}${toMe ? ' to-me' : ''}`,
    dataset: { id: m.id, seq: m.channel_seq ?? '' }, tabIndex: 0, role: 'article', 'aria-label': `${displayName(author)}, ${fmt.time(created)}` });
  const gutter = opts.grouped
    ? h('time', { class: 'gutter-time', dateTime: m.created_at, title: fmt.full(created) }, fmt.time(created))
    : h('span', { class: 'who-pic', dataset: { card: m.author_id } }, avatar(author, 'md'));
  const content = h('div', { class: 'msg-content' });
  if (!opts.grouped) {
    content.appendChild(h('div', { class: 'msg-head' },
      h('span', { class: 'author', role: 'button', tabIndex: -1, dataset: { card: m.author_id } }, displayName(author)),
      author && author.kind === 'bot' ? h('span', { class: 'tag bot' }, 'bot') : null,
      h('time', { dateTime: m.created_at, title: fmt.full(created) }, fmt.time(created))));
  }
  if (m.quoted_message_id && !deleted) content.appendChild(quoteBlock(m.quoted_message_id));
  if (deleted) content.appendChild(h('p', { class: 'tombstone' }, 'This message was deleted.'));
  else if (state.editing === m.id) content.appendChild(editor(m));
  else content.append(...(kindRenderer(m.kind) ? [kindRenderer(m.kind)(m)] : bodyOf(m)));
  if (!deleted && m.attachments && m.attachments.length) content.appendChild(h('div', { class: 'attachments' }, ...m.attachments.map(attachment)));
  if (m.pending && m.progress !== null && m.progress < 1 && !m.upload) {
    const bar = h('div', { class: 'progress-bar' });
    bar.style.width = `${Math.round(m.progress * 100)}%`;
    content.appendChild(h('div', { class: 'progress', role: 'progressbar', 'aria-valuenow': Math.round(m.progress * 100) }, bar));
  }
  if (m.pending) content.appendChild(sendState(m));
  if (!deleted && m.reactions && m.reactions.length) content.appendChild(reactions(m));
  const ts = m.thread_state;
  if (!opts.inThread && !m.parent_message_id && ts && ts.reply_count > 0) {
    content.appendChild(h('button', { class: 'thread-summary', onclick: () => actions.openPanel({ kind: 'thread', rootId: m.id }) },
      `${ts.reply_count} ${ts.reply_count === 1 ? 'reply' : 'replies'}`,
      ts.last_reply_at ? h('span', { class: 'muted' }, ` · last reply ${fmt.time(new Date(ts.last_reply_at))}`) : null));
  }
  if (!m.pending && !deleted) content.append(...rowPartsOf(m));
  // who-<id>: the author's presence dot (lazy/presence.js).
  row.append(h('div', { class: opts.grouped ? 'gutter' : `gutter who-${m.author_id}` }, gutter), content);
  if (!m.pending && !deleted) row.appendChild(toolbar(m, mine, opts.inThread));
  const wrap = h('div', { class: 'row' });
  if (opts.day) wrap.appendChild(h('div', { class: 'day', role: 'separator' }, h('span', null, fmt.day(created))));
  if (opts.unreadLine) wrap.appendChild(h('div', { class: 'new-line', role: 'separator' }, h('span', null, 'New messages')));
  wrap.appendChild(row);
  return wrap;
}

// sendState says where an unsent message is: sending, waiting for the network, or refused or
// given up (Retry unless a retry would be refused again; Edit hands the text back; Discard).
function sendState(m) {
  const btn = (label, fn) => h('button', { class: 'link', type: 'button', onclick: fn }, label);
  const discard = btn('Discard', () => actions.discard(m));
  if (m.waiting) return h('div', { class: 'send-state' }, 'Waiting for the connection…', ' ', discard);
  if (!m.failed) return h('div', { class: 'send-state' }, 'Sending…');
  return h('div', { class: 'send-state error' }, m.failed, ' ', m.refused ? null : btn('Retry', () => actions.retry(m)), ' ',
    m.file ? null : btn('Edit', () => editUnsent(m)), ' ', discard);
}

function editUnsent(m) {
  const box = /** @type {HTMLTextAreaElement} */ (document.querySelector(m.reply ? '.thread-composer .compose-box' : 'form.composer .compose-box'));
  if (!box) return;
  box.value = box.value.trim() ? `${box.value}\n\n${m.body}` : m.body;
  box.dispatchEvent(new Event('input', { bubbles: true }));
  box.focus();
  actions.discard(m);
}

function quoteBlock(id) {
  const q = state.messages.get(id);
  if (!q) return h('blockquote', { class: 'quote muted' }, 'Quoted message');
  return h('blockquote', { class: 'quote' }, h('span', { class: 'author' }, displayName(state.users.get(q.author_id) || q.author)),
    h('div', { class: 'body' }, markdown(q.deleted_at ? 'This message was deleted.' : q.body.slice(0, 300))));
}

function attachment(u) {
  const url = `/api/uploads/${encodeURIComponent(u.id)}`;
  if (/^image\//.test(u.content_type || '')) {
    const img = h('img', { class: 'inline-image', src: url, alt: u.filename || 'image', loading: 'lazy' });
    if (u.width && u.height) {
      const w = Math.min(360, u.width);
      img.width = w;
      img.height = Math.round((u.height * w) / u.width);
    }
    // A click opens the overlay; a modified click (new tab, download) is the browser's.
    return h('a', { href: url, target: '_blank', rel: 'noopener', onclick: (e) => {
      if (e.button || e.ctrlKey || e.metaKey || e.shiftKey || e.altKey) return;
      e.preventDefault();
      const from = e.currentTarget;
      import('../lazy/overlay.js').then((o) => o.openImage(u, url, from)).catch((err) => actions.toast(err.message));
    } }, img);
  }
  const file = h('a', { class: 'file', href: url, target: '_blank', rel: 'noopener', download: u.filename || '' }, icon('clip'), u.filename || 'file',
    h('span', { class: 'muted' }, ` ${Math.max(1, Math.round((u.byte_size || 0) / 1024))} KB`));
  const preview = previewButton(u);
  return preview ? h('span', { class: 'file-wrap' }, file, preview) : file;
}

function reactions(m) {
  return h('div', { class: 'reactions' }, ...m.reactions.map((r) => h('button', {
    class: `chip${r.reacted_by_me ? ' mine' : ''}`, 'aria-pressed': r.reacted_by_me ? 'true' : 'false',
    title: r.reacted_by_me ? 'Remove your reaction' : 'React', onclick: () => actions.toggleReaction(m.id, r.emoji).catch((e) => actions.toast(e.message)),
  }, h('span', { class: 'emoji' }, r.emoji), h('span', { class: 'n' }, String(r.count)))));
}

function editor(m) {
  const box = h('textarea', { class: 'edit-box', 'aria-label': 'Edit message', rows: 2,
    oninput: () => setEditDraft(m.id, box.value) });
  // The row may be drawn again while it is being edited (an event, a scroll): keep the draft.
  box.value = state.editDraft && state.editDraft.id === m.id ? state.editDraft.body : m.body;
  box.addEventListener('keydown', (e) => {
    if (e.key === 'Enter' && !e.shiftKey) { e.preventDefault(); actions.editMessage(m.id, box.value).catch((err) => actions.toast(err.message)); }
    if (e.key === 'Escape') { e.stopPropagation(); setEditing(null); }
  });
  setTimeout(() => { if (document.activeElement !== box && box.isConnected) { box.focus(); box.setSelectionRange(box.value.length, box.value.length); } });
  return h('div', { class: 'editing' }, box, h('p', { class: 'hint' }, 'Enter to save · Esc to cancel'));
}

// toolbar: each row's actions. A row has one of a few sets of buttons; each set is built once
// and cloned (building six buttons and their SVGs for every row was most of a row's cost, which a
// burst of messages pays for each one), and one listener per row answers its buttons.
const bars = new Map(); // the set's names → the toolbar to clone
const ACTIONS = [['react', 'smile', 'Add reaction'], ['thread', 'thread', 'Reply in thread'], ['quote', 'quote', 'Quote'],
  ['pin', 'pin', 'Pin or unpin'], ['edit', 'edit', 'Edit'], ['delete', 'trash', 'Delete']];
function toolbar(m, mine, inThread) {
  const root = !m.parent_message_id;
  const has = { react: true, thread: !inThread && root, quote: true, pin: !!m.channel_id && root, edit: mine, delete: mine };
  const key = ACTIONS.filter(([name]) => has[name]).map(([name]) => name).join();
  if (!bars.has(key)) {
    bars.set(key, h('div', { class: 'actions', role: 'toolbar', 'aria-label': 'Message actions' }, ...ACTIONS.filter(([name]) => has[name])
      .map(([name, pic, label]) => h('button', { class: 'icon-btn', title: label, 'aria-label': label, dataset: { act: name } }, icon(pic)))));
  }
  const bar = /** @type {HTMLElement} */ (bars.get(key).cloneNode(true));
  bar.addEventListener('click', (e) => {
    const b = /** @type {HTMLElement} */ (e.target).closest('button[data-act]');
    if (!b || !bar.contains(b)) return;
    e.stopPropagation();
    ({
      react: () => picker(b, (c) => actions.toggleReaction(m.id, c).catch((err) => actions.toast(err.message))),
      thread: () => actions.openPanel({ kind: 'thread', rootId: m.id }),
      quote: () => setQuote(m),
      pin: () => actions.togglePin(m).catch((err) => actions.toast(err.message)),
      edit: () => setEditing(m.id),
      delete: () => confirmDelete(b, m),
    })[b.dataset.act]();
  });
  return bar;
}

// confirmDelete asks on the toolbar itself, not in a dialog: a second press deletes.
function confirmDelete(button, m) {
  const sure = h('button', { class: 'btn small danger', onclick: (e) => {
    e.stopPropagation();
    actions.deleteMessage(m.id).catch((err) => actions.toast(err.message));
  } }, 'Delete?');
  button.replaceWith(sure);
  sure.focus();
  // Any other click, or five seconds, puts the ordinary button back.
  const restore = () => { if (sure.isConnected) sure.replaceWith(button); };
  setTimeout(() => document.addEventListener('click', restore, { once: true }));
  setTimeout(restore, 5000);
}

// picker opens lazy/picker.js's picker for onPick or a composer's box.
export function picker(anchor, onPick) {
  import('../lazy/picker.js').then((p) => p.openPicker(anchor, onPick), (err) => actions.toast(err.message));
}

// emojiButton opens the picker for a composer's box.
export const emojiButton = (box) => h('button', { class: 'icon-btn', type: 'button', title: 'Emoji', 'aria-label': 'Emoji', 'aria-haspopup': 'dialog',
  onclick: (e) => picker(e.currentTarget, box) }, icon('smile'));
