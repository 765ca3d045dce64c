// views/limit.js: the body limit in the composer. Near the server's 40,000 characters a counter
// shows what is left; past it a warning, Enter sends nothing, and "Send as a file" uploads the
// text as message.txt instead (a log pasted whole is still shared).
import { h, replace } from '../dom.js';

export const MAX_BODY = 40000; // SPEC: a message body is at most 40,000 characters
const SHOW_FROM = 2000; // characters left when the counter appears

// chars counts Unicode characters as the server does; a UTF-16 length at or under the point
// where the counter appears cannot hide anything, so only longer texts are counted exactly.
export function chars(text) {
  return text.length <= MAX_BODY - SHOW_FROM ? text.length : [...text].length;
}

export class LengthNote {
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
