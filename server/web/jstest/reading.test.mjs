// Which place a workspace opens at (reading.js pickDefaultPlace): the one last open, else
// #general, else the first by name in collation order; archived channels and channels left are
// never picked.
import { test, beforeEach } from 'node:test';
import assert from 'node:assert/strict';
import './env.mjs';

const saved = new Map();
globalThis.localStorage = { getItem: (k) => saved.get(k) ?? null, setItem: (k, v) => saved.set(k, String(v)), removeItem: (k) => saved.delete(k) };
const { state } = await import('../static/assets/js/store.js');
const { pickDefaultPlace } = await import('../static/assets/js/reading.js');

const channels = (...list) => new Map(list.map((c) => [c.id, c]));

beforeEach(() => {
  saved.clear();
  state.wsId = 'wsp_1';
  state.dms = new Map([['dm_1', { id: 'dm_1' }]]);
});

test('general, wherever the listing has it', () => {
  state.channels = channels({ id: 'c1', name: 'alpha' }, { id: 'c2', name: 'general' });
  assert.equal(pickDefaultPlace(), 'c2');
});

test('without general, the first by name as people read it, not by code point', () => {
  state.channels = channels({ id: 'c1', name: 'Zeta' }, { id: 'c2', name: 'old', archived: true }, { id: 'c3', name: 'beta' },
    { id: 'c4', name: 'abc', joined: false }, { id: 'c5', name: 'Mango' });
  assert.equal(pickDefaultPlace(), 'c3');
});

test('the place last open, a channel or a conversation, unless it was left', () => {
  state.channels = channels({ id: 'c1', name: 'general' }, { id: 'c2', name: 'random' }, { id: 'c3', name: 'left', joined: false });
  saved.set('natter.place.wsp_1', 'c2');
  assert.equal(pickDefaultPlace(), 'c2');
  saved.set('natter.place.wsp_1', 'dm_1');
  assert.equal(pickDefaultPlace(), 'dm_1');
  saved.set('natter.place.wsp_1', 'c3');
  assert.equal(pickDefaultPlace(), 'c1');
});

test('nothing to open', () => {
  state.channels = channels({ id: 'c1', name: 'old', archived: true });
  state.dms = new Map();
  assert.equal(pickDefaultPlace(), undefined);
});
