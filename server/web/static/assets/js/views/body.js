// @ts-check
// views/body.js: a message's text in the list: "(edited)" at the end of its last line, a long
// text collapsed behind "Show more" (remembered per message, so a redraw keeps it open), and no
// text at all when it only repeats the name of the file it carries.
import { h, fmt } from '../dom.js';
import { render as markdown } from '../markdown.js';
import { touch } from '../store.js';

const LONG_CHARS = 1200;
const LONG_LINES = 16;
const opened = new Set(); // ids of long messages the reader opened

export const isOpened = (id) => opened.has(id);

function isLong(body) {
  if (body.length > LONG_CHARS) return true;
  let lines = 1;
  for (let i = body.indexOf('\n'); i >= 0 && lines <= LONG_LINES; i = body.indexOf('\n', i + 1)) lines++;
  return lines > LONG_LINES;
}

// bodyOf returns the nodes that show m's text (none for an upload's own file name).
export function bodyOf(m) {
  const files = m.attachments && m.attachments.length ? m.attachments : m.file ? [{ filename: m.file.name }] : [];
  if (files.length && files.some((f) => f.filename && f.filename === m.body.trim())) return [];
  const long = isLong(m.body) && !opened.has(m.id);
  const edited = m.edited_at ? h('span', { class: 'edited', title: fmt.full(new Date(m.edited_at)) }, '(edited)') : null;
  const body = h('div', { class: `body${long ? ' collapsed' : ''}${edited && !long ? ' inline-end' : ''}` }, markdown(m.body));
  if (!long) return [edited ? h('div', { class: 'body-line' }, body, ' ', edited) : body];
  const more = h('button', { class: 'link show-more', type: 'button', 'aria-expanded': 'false', onclick: () => { opened.add(m.id); touch('messages', 'thread', 'pins'); } }, 'Show more');
  return [body, h('div', { class: 'more-line' }, more, edited ? ' ' : null, edited)];
}
