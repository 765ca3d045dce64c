// @ts-check
// lazy/emoji.js is the emoji table (assets/emoji.txt, fetched the first time the picker opens or
// `:` completion starts: a first visit does not pay for it) and what the picker and completion
// ask of it: search by name and shortcode, the recently used (this browser's localStorage, most
// recent first), the skin tone chosen, and which emoji the system font can draw.

// DEFAULTS fill "Frequently used" until there is a history.
const DEFAULTS = ['👍', '❤️', '😂', '🎉', '😮', '😢', '👀', '✅', '🚀', '🙏'];
const RECENT_KEY = 'natter.emoji.recent';
const TONE_KEY = 'natter.emoji.tone';
const RECENT_MAX = 24;
const TONES = /[\u{1F3FB}-\u{1F3FF}]/gu;

let loading = null;

// load resolves to the table: { categories: [{ name, list }], all, byCode, byChar }. An entry is
// { c: character, n: name, codes: [shortcodes], tones: takes skin tones, v: Emoji version or 0,
// hidden: the system font cannot draw it }.
export function load() {
  loading ||= fetch('/assets/emoji.txt').then((r) => {
    if (!r.ok) throw new Error(`Emoji could not be loaded (${r.status})`);
    return r.text();
  }).then(parse).catch((e) => { loading = null; throw e; });
  return loading;
}

// parse reads the table; its format is in its header (server/web/emojigen writes it).
function parse(text) {
  const t = { categories: [], all: [], byCode: new Map(), byChar: new Map() };
  let cat = null;
  for (const line of text.split('\n')) {
    if (!line || line[0] === '#') continue;
    if (line[0] === '=') { cat = { name: line.slice(1), list: [] }; t.categories.push(cat); continue; }
    const [c, n, codes = '', flags = ''] = line.split('\t');
    const e = { c, n, codes: codes ? codes.split(' ').map((s) => (s === '~' ? n.toLowerCase().replaceAll(' ', '_') : s)) : [],
      tones: flags[0] === 't', v: Number(flags.replace('t', '')) || 0, hidden: false };
    for (const s of e.codes) t.byCode.set(s, e);
    t.byChar.set(c, e);
    t.all.push(e);
    cat.list.push(e);
  }
  const newest = drawable(t.all);
  for (const e of t.all) e.hidden = e.v > newest;
  return t;
}

// drawable is the newest Emoji version the system font draws: the first emoji of each version
// (12 and on) is drawn on a canvas, and counts when it comes out in colour and one glyph wide
// (a sequence the font does not know falls apart into several). A browser without a colour
// emoji font cannot be asked this way: then every emoji is offered.
function drawable(all) {
  const firsts = new Map();
  for (const e of all) if (e.v && !firsts.has(e.v)) firsts.set(e.v, e.c);
  const cv = document.createElement('canvas');
  cv.width = 96; cv.height = 40;
  const g = cv.getContext('2d', { willReadFrequently: true });
  if (!g) return Infinity;
  g.font = `32px ${getComputedStyle(document.documentElement).getPropertyValue('--emoji') || 'sans-serif'}`;
  g.textBaseline = 'top';
  const colour = (c) => {
    g.clearRect(0, 0, 96, 40);
    g.fillStyle = '#000';
    g.fillText(c, 0, 0);
    const d = g.getImageData(0, 0, 96, 40).data;
    for (let i = 0; i < d.length; i += 4) if (d[i + 3] && (d[i] !== d[i + 1] || d[i + 1] !== d[i + 2])) return true;
    return false;
  };
  if (!colour('😀')) return Infinity;
  const one = g.measureText('😀').width * 1.5;
  let newest = 11;
  for (const v of [...firsts.keys()].sort((a, b) => a - b)) {
    const c = firsts.get(v);
    if (!colour(c) || g.measureText(c).width > one) break;
    newest = v;
  }
  return newest;
}

// search finds emoji by shortcode or name: an exact shortcode first, then shortcodes and name
// words that start with q, then those that contain it; within each, the recently used (and the
// defaults) first, then the table's order.
export function search(t, q, limit = Infinity) {
  q = q.trim().toLowerCase().replace(/^:|:$/g, '');
  if (!q) return [];
  const ranked = [[], [], [], []];
  for (const e of t.all) {
    if (e.hidden) continue;
    const name = e.n.toLowerCase();
    if (e.codes.includes(q)) ranked[0].push(e);
    else if (e.codes.some((s) => s.startsWith(q))) ranked[1].push(e);
    else if (name.startsWith(q) || name.includes(` ${q}`)) ranked[2].push(e);
    else if (name.includes(q) || e.codes.some((s) => s.includes(q))) ranked[3].push(e);
  }
  const used = new Map(recent().map((c, i) => [entryOf(t, c), i]));
  const rank = (e) => used.get(e) ?? Infinity;
  return ranked.flatMap((r) => r.sort((a, b) => rank(a) - rank(b))).slice(0, limit);
}

// emojify turns each `:shortcode:` of text the table knows (after a space or the start, before
// a space, punctuation or the end) into its emoji, except inside `code` and ``` blocks.
export function emojify(t, text) {
  return text.split(/(```[\s\S]*?```|`[^`\n]*`)/).map((part, i) => (i % 2 ? part
    : part.replace(/(^|\s):([a-z0-9_+-]+):(?=[\s.,;!?)]|$)/gi, (all, pre, code) => { const e = t.byCode.get(code.toLowerCase()); return e ? pre + toned(e) : all; }))).join('');
}

// entryOf is the table's entry for a character, a toned one included (its tone removed).
export function entryOf(t, c) {
  return t.byChar.get(c) || t.byChar.get(c.replace(TONES, '')) || t.byChar.get(`${c.replace(TONES, '')}\uFE0F`) || null;
}

function read(key, fallback) {
  try { const v = JSON.parse(localStorage.getItem(key) || 'null'); return v ?? fallback; } catch { return fallback; }
}

function write(key, v) {
  try { localStorage.setItem(key, JSON.stringify(v)); } catch { /* private mode or full: the history is a convenience */ }
}

// recent is what "Frequently used" shows: this browser's history, then the defaults.
export function recent() {
  const seen = read(RECENT_KEY, []);
  const list = Array.isArray(seen) ? seen.filter((c) => typeof c === 'string' && c.length <= 32) : [];
  return [...new Set([...list, ...DEFAULTS])].slice(0, RECENT_MAX);
}

// remember puts c first in the history.
export function remember(c) {
  const list = read(RECENT_KEY, []);
  write(RECENT_KEY, [c, ...(Array.isArray(list) ? list : []).filter((x) => x !== c)].slice(0, RECENT_MAX));
}

// tone is the skin tone chosen: 0 none (the yellow default), 1 light … 5 dark.
export function tone() {
  const n = read(TONE_KEY, 0);
  return Number.isInteger(n) && n >= 0 && n <= 5 ? n : 0;
}

export function setTone(n) { write(TONE_KEY, n); }

// toned is e's character in skin tone n: the modifier right after the first character, in place
// of its emoji presentation selector (the rule server/web/emoji.go applies too).
export function toned(e, n = tone()) {
  if (!e.tones || !n) return e.c;
  const [first, ...rest] = [...e.c];
  if (rest[0] === '\uFE0F') rest.shift();
  return first + String.fromCodePoint(0x1F3FA + n) + rest.join('');
}
