// @ts-check
// views/composer.js: Enter sends, Shift+Enter is a new line, ↑ in an empty composer edits your
// last message; files come by the button, drag and drop or paste, each sent as its own message.
import { h, replace, icon, displayName } from '../dom.js';
import { state, conv, setEditing, setQuote } from '../store.js';
import * as actions from '../actions.js';
import { dmName } from './sidebar.js';
import { slashOf, invokeSlash } from '../slash.js';
import { emojiButton } from './row.js';

// The body limit (issue 30). Near the server's 40,000 characters a counter shows what is left;
// past it a warning, Enter sends nothing, and "Send as a file" uploads the text as message.txt
// instead (a log pasted whole is still shared).
const MAX_BODY = 40000; // SPEC: a message body is at most 40,000 characters
const SHOW_FROM = 2000; // characters left when the counter appears

// chars counts Unicode characters as the server does; a UTF-16 length at or under the point
// where the counter appears cannot hide anything, so only longer texts are counted exactly.
function chars(text) {
  return text.length <= MAX_BODY - SHOW_FROM ? text.length : [...text].length;
}

class LengthNote {
  // onFile(file) sends the composer's text as a file.
  constructor(onFile) {
    this.onFile = onFile;
    this.el = h('div', { class: 'compose-count', 'aria-live': 'polite', hidden: true });
    this.over = 0;
  }

  // update redraws the note for text; it returns whether text is over the limit.
  update(text) {
    const n = chars(text);
    const left = MAX_BODY - n;
    this.over = Math.max(0, -left);
    this.el.hidden = left > SHOW_FROM;
    this.el.classList.toggle('over', left < 0);
    if (left >= 0) { replace(this.el, `${left.toLocaleString('en')} character${left === 1 ? '' : 's'} left`); return false; }
    const over = -left;
    replace(this.el, `${over.toLocaleString('en')} character${over === 1 ? '' : 's'} over the limit of 40,000 — shorten it or `,
      h('button', { class: 'link', type: 'button', onclick: () => this.onFile(new File([text], 'message.txt', { type: 'text/plain' })) }, 'Send as a file'));
    return true;
  }
}

// The command menu (views/commands.js) is fetched when a message first starts with "/"; until
// then its list is an empty element the composer already points at (aria-controls).
class LazyCommandMenu {
  constructor(onPick) {
    this.el = h('ul', { class: 'cmd-menu', id: 'cmd-menu', role: 'listbox', 'aria-label': 'Bot commands', hidden: true });
    this.onPick = onPick;
    this.real = null;
    this.loading = null;
  }

  update(text) {
    this.text = text;
    if (this.real) { this.real.update(text); return; }
    if (!text.startsWith('/')) return;
    this.loading ||= import('./commands.js').then((m) => {
      this.real = new m.CommandMenu(this.onPick, this.el);
      this.real.update(this.text);
    }, () => { this.loading = null; });
  }

  close() { if (this.real) this.real.close(); }

  key(e, text) { return !!this.real && this.real.key(e, text); }
}

// emojified: body with the shortcodes left in it (pasted, typed before the table came) as emoji.
// Sends chain on it to keep their order.
export const emojified = (body) => (/(^|\s):[\w+-]+:/.test(body) ? import('../lazy/emoji.js')
  .then((m) => m.load().then((t) => m.emojify(t, body))).catch(() => body) : Promise.resolve(body));

export class Composer {
  constructor() {
    this.box = h('textarea', { class: 'compose-box', rows: 1, 'aria-label': 'Message', placeholder: 'Message',
      'aria-controls': 'cmd-menu', onkeydown: (e) => this.key(e),
      oninput: () => { this.grow(); this.menu.update(this.box.value); this.limit.update(this.box.value); if (this.box.value) actions.typing(); },
      onblur: () => this.menu.close(),
      onpaste: (e) => this.paste(e) });
    this.file = h('input', { type: 'file', multiple: true, hidden: true, onchange: () => { this.sendFiles([...this.file.files]); this.file.value = ''; } });
    this.quote = h('div', { class: 'quote-chip', hidden: true });
    this.sending = Promise.resolve();
    this.limit = new LengthNote((file) => { const quote = state.quote; this.clear(); actions.send(file.name, { file, quote }); });
    this.menu = new LazyCommandMenu((text) => { this.box.value = text; this.box.focus(); this.grow(); });
    this.el = h('form', { class: 'composer', onsubmit: (e) => { e.preventDefault(); this.submit(); } },
      this.quote, this.menu.el, this.limit.el,
      h('div', { class: 'compose-row' },
        h('button', { class: 'icon-btn', type: 'button', title: 'Attach files', 'aria-label': 'Attach files', onclick: () => this.file.click() }, icon('clip')),
        this.box, this.file, emojiButton(this.box),
        h('button', { class: 'icon-btn send', type: 'submit', title: 'Send (Enter)', 'aria-label': 'Send' }, icon('send'))),
      h('p', { class: 'compose-hint' }, 'Enter to send · Shift+Enter for a new line · ↑ to edit your last message · / for bot commands'));
    // Files dropped anywhere on the conversation are sent to it.
    document.addEventListener('dragover', (e) => { if (state.view && e.dataTransfer && [...e.dataTransfer.types].includes('Files')) { e.preventDefault(); document.body.classList.add('dropping'); } });
    document.addEventListener('dragleave', (e) => { if (!e.relatedTarget) document.body.classList.remove('dropping'); });
    document.addEventListener('drop', (e) => {
      document.body.classList.remove('dropping');
      if (!state.view || !e.dataTransfer || !e.dataTransfer.files.length) return;
      e.preventDefault();
      this.sendFiles([...e.dataTransfer.files]);
    });
  }

  render() {
    const v = state.view;
    this.el.hidden = !v;
    if (!v) return;
    const place = v.kind === 'channel' ? `#${(state.channels.get(v.id) || {}).name || ''}` : dmName(state.dms.get(v.id) || {});
    this.box.placeholder = `Message ${place}`;
    if (state.quote) {
      replace(this.quote, h('span', null, 'Quoting ', h('strong', null, displayName(state.users.get(state.quote.author_id) || state.quote.author)), ': ',
        h('span', { class: 'muted' }, state.quote.body.slice(0, 80))),
      h('button', { class: 'icon-btn', type: 'button', 'aria-label': 'Remove quote', onclick: () => setQuote(null) }, icon('close')));
      this.quote.hidden = false;
      this.box.focus();
    } else {
      this.quote.hidden = true;
    }
  }

  grow() {
    this.box.style.height = 'auto';
    this.box.style.height = `${Math.min(this.box.scrollHeight, 240)}px`;
  }

  key(e) {
    if (this.menu.key(e, this.box.value)) return;
    if (e.key === 'Enter' && !e.shiftKey && !e.isComposing) { e.preventDefault(); this.submit(); return; }
    if (e.key === 'ArrowUp' && !this.box.value && state.view) {
      const c = conv(state.view.id);
      for (let i = c.ids.length - 1; i >= 0; i--) {
        const m = state.messages.get(c.ids[i]);
        if (m && m.author_id === state.me.id && !m.deleted_at) { e.preventDefault(); setEditing(m.id); return; }
      }
    }
  }

  submit() {
    const body = this.box.value;
    if (!body.trim() || !state.view) return;
    // Over the limit the server would refuse it: the note above the box says what to do.
    if (this.limit.update(body)) { this.limit.el.querySelector('button')?.focus(); return; }
    const slash = state.view.kind === 'channel' && !state.quote ? slashOf(body) : null;
    // An ephemeral answer is for the sender alone: shown here, posted nowhere.
    if (slash) {
      invokeSlash(state.view.id, slash).then((res) => { if (res.response_type === 'ephemeral' && res.text) actions.toast(res.text); },
        (e) => { actions.toast(e.message); this.box.value = this.box.value || body; });
    }
    else {
      const quote = state.quote;
      this.sending = this.sending.then(() => emojified(body)).then((text) => actions.send(text, { quote })).catch((e) => actions.toast(e.message));
    }
    this.clear();
  }

  clear() {
    setQuote(null);
    this.box.value = '';
    this.grow();
    this.limit.update('');
  }

  paste(e) {
    const files = [...(e.clipboardData ? e.clipboardData.files : [])];
    if (!files.length) return;
    e.preventDefault();
    this.sendFiles(files);
  }

  sendFiles(files) {
    const text = this.box.value.trim();
    files.forEach((f, i) => actions.send(i === 0 && text ? text : f.name || 'pasted-image.png', { file: f }));
    if (text) { this.box.value = ''; this.grow(); }
  }
}
