// @ts-check
// lazy/xml.js is the small XML reader the Office previews need (workers have no DOMParser): it
// walks the tags and text of a part, decodes the predefined and numeric entities, and refuses
// what is not well formed (a tag left open, a close tag that does not match). It expands no
// declared entity, so a DOCTYPE cannot make it grow.
import { Malformed } from './zip.js';

const named = { lt: '<', gt: '>', amp: '&', quot: '"', apos: "'" };

export function unescape(s) {
  if (!s.includes('&')) return s;
  return s.replace(/&(#x[0-9a-f]+|#[0-9]+|[a-z]+);/gi, (all, e) => {
    if (e[0] !== '#') return named[e] ?? all;
    const n = e[1] === 'x' || e[1] === 'X' ? parseInt(e.slice(2), 16) : parseInt(e.slice(1), 10);
    return n > 0 && n <= 0x10ffff ? String.fromCodePoint(n) : '';
  });
}

// Attributes are read with one regular expression per tag. A tag body that is one long run
// with no '=' makes it backtrack quadratically (as most such readers do); the preview's
// 5-second limit, not this file, is what bounds a crafted part.
const attrRe = /([^\s=/]+)\s*=\s*(?:"([^"]*)"|'([^']*)')/g;

function attrs(body) {
  const out = {};
  attrRe.lastIndex = 0;
  for (let m = attrRe.exec(body); m; m = attrRe.exec(body)) out[m[1]] = unescape(m[2] ?? m[3]);
  return out;
}

// walk calls open(name, attrs), close(name) and text(string) in document order. Element names
// keep their prefix ("a:t"); callers compare the local part with local().
/**
 * @param {string} xml
 * @param {{ open?: (name: string, attrs: any) => void, close?: (name: string) => void, text?: (s: string) => void }} on
 */
export function walk(xml, { open = () => {}, close = () => {}, text = () => {} }) {
  const stack = [];
  let i = 0;
  while (i < xml.length) {
    const lt = xml.indexOf('<', i);
    if (lt < 0) { if (xml.slice(i).trim()) text(unescape(xml.slice(i))); break; }
    if (lt > i) text(unescape(xml.slice(i, lt)));
    if (xml.startsWith('<!--', lt)) { i = skip(xml, lt, '-->'); continue; }
    if (xml.startsWith('<![CDATA[', lt)) { const e = skip(xml, lt, ']]>'); text(xml.slice(lt + 9, e - 3)); i = e; continue; }
    if (xml.startsWith('<?', lt)) { i = skip(xml, lt, '?>'); continue; }
    if (xml.startsWith('<!', lt)) { i = skip(xml, lt, '>'); continue; }
    const gt = xml.indexOf('>', lt);
    if (gt < 0) throw new Malformed('a tag is never closed');
    let body = xml.slice(lt + 1, gt);
    if (body[0] === '/') {
      const name = body.slice(1).trim();
      if (stack.pop() !== name) throw new Malformed(`unexpected </${name}>`);
      close(name);
    } else {
      const selfClosing = body.endsWith('/');
      if (selfClosing) body = body.slice(0, -1);
      const sp = body.search(/\s/);
      const name = sp < 0 ? body : body.slice(0, sp);
      if (!name) throw new Malformed('an empty tag');
      open(name, sp < 0 ? {} : attrs(body.slice(sp)));
      if (selfClosing) close(name);
      else stack.push(name);
    }
    i = gt + 1;
  }
  if (stack.length) throw new Malformed(`<${stack.pop()}> is never closed`);
}

function skip(xml, from, end) {
  const e = xml.indexOf(end, from);
  if (e < 0) throw new Malformed('unterminated markup');
  return e + end.length;
}

export const local = (name) => name.slice(name.indexOf(':') + 1);
