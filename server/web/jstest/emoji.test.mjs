// The emoji table's client side without a browser (lazy/emoji.js): the real assets/emoji.txt read
// as the picker reads it, search and its ranking, shortcodes in text, skin tones, and the
// recently used kept in (a stand-in for) localStorage.
import { test, beforeEach } from 'node:test';
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';

const store = new Map();
globalThis.localStorage = { getItem: (k) => store.get(k) ?? null, setItem: (k, v) => store.set(k, String(v)) };
// No canvas here: which versions the font draws cannot be asked, so every emoji is offered.
globalThis.document = { createElement: () => ({ getContext: () => null }) };
globalThis.fetch = async (url) => {
  assert.equal(url, '/assets/emoji.txt');
  return { ok: true, text: () => readFile(new URL('../static/assets/emoji.txt', import.meta.url), 'utf8') };
};
const { load, search, emojify, toned, entryOf, recent, remember } = await import('../static/assets/js/lazy/emoji.js');
const t = await load();
const chars = (list) => list.map((e) => e.c).join(' ');

beforeEach(() => store.clear());

test('the table: the nine categories, every emoji, shortcodes with ~ spelled out', () => {
  assert.deepEqual(t.categories.map((c) => c.name), ['Smileys & Emotion', 'People & Body', 'Animals & Nature', 'Food & Drink',
    'Travel & Places', 'Activities', 'Objects', 'Symbols', 'Flags']);
  assert.ok(t.all.length >= 1870, `${t.all.length} emoji`);
  assert.equal(t.byCode.get('tada').c, '🎉');
  assert.equal(t.byCode.get('tada').n, 'party popper');
  assert.equal(t.byCode.get('thinking_face').c, '🤔', '"~" is the name with underscores');
  assert.equal(t.byCode.get('+1').c, '\u{1F44D}');
  assert.equal(t.all.filter((e) => e.hidden).length, 0);
});

test('search: an exact shortcode, then prefixes, the recently used first within each', () => {
  assert.equal(chars(search(t, 'tada')), '🎉');
  assert.equal(chars(search(t, ':tada:')), '🎉');
  assert.equal(chars(search(t, 'thumbs')), '👍 👎');
  assert.equal(search(t, 'ta', 8)[0].c, '🎉', 'a common emoji before tangerine');
  remember('🚕');
  assert.equal(chars(search(t, 'ta', 2)), '🚕 🎉', 'used lately, the taxi comes first');
  assert.equal(search(t, 'party')[0].c, '🥳', 'a shortcode that starts so before a name that does');
  assert.equal(search(t, 'popper')[0].c, '🎉', 'by a word of the name');
  assert.deepEqual(search(t, '   '), []);
  assert.deepEqual(search(t, 'no such emoji at all'), []);
  assert.equal(search(t, 'a', 5).length, 5);
});

test('emojify: known shortcodes between spaces, not in code, not glued to a word', () => {
  assert.equal(emojify(t, ':tada: shipped'), '🎉 shipped');
  assert.equal(emojify(t, 'done :+1: and :heart:.'), 'done 👍 and ❤️.');
  assert.equal(emojify(t, 'keep `:tada:` and\n```\n:tada:\n```'), 'keep `:tada:` and\n```\n:tada:\n```');
  assert.equal(emojify(t, ':party-parrot: a:tada: 10:30:00'), ':party-parrot: a:tada: 10:30:00');
  assert.equal(emojify(t, ':TADA:'), '🎉');
});

test('skin tones: after the first character, its FE0F dropped; none where none applies', () => {
  assert.equal(toned(t.byCode.get('+1'), 3), '\u{1F44D}\u{1F3FD}');
  assert.equal(toned(t.byCode.get('point_up'), 5), '\u261D\u{1F3FF}');
  assert.equal(toned(t.byCode.get('heart'), 2), '\u2764\uFE0F');
  assert.equal(toned(t.byCode.get('+1'), 0), '\u{1F44D}');
  assert.equal(entryOf(t, '\u{1F44D}\u{1F3FD}'), t.byCode.get('+1'));
  assert.equal(entryOf(t, '\u261D\u{1F3FF}'), t.byCode.get('point_up'));
});

test('recently used: most recent first, each once, at most 24, the defaults after', () => {
  assert.deepEqual(recent().slice(0, 3), ['👍', '❤️', '😂']);
  remember('🚀');
  remember('🎉');
  remember('🚀');
  assert.deepEqual(recent().slice(0, 4), ['🚀', '🎉', '👍', '❤️']);
  for (const e of t.all.slice(0, 40)) remember(e.c);
  assert.equal(recent().length, 24);
  assert.equal(recent()[0], t.all[39].c);
  store.set('natter.emoji.recent', '{not json');
  assert.equal(recent()[0], '👍', 'a broken history is no history');
  store.set('natter.emoji.recent', JSON.stringify([1, null, '🎉']));
  assert.equal(recent()[0], '🎉');
});
