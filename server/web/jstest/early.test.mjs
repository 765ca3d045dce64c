// early.js, the page's inline script, without a browser: which reads it starts before any module
// has loaded, in which order, and that each answer is handed once. Each test loads a fresh copy
// of the script (a query string makes node load the file again) against a fake network whose
// answers the test releases one by one.
import { test } from 'node:test';
import assert from 'node:assert/strict';

let copy = 0;
// start runs early.js with the page at pathname and localStorage holding saved; answers maps a
// path to the JSON its GET answers. It returns the paths asked, in order, and release(path).
async function start(pathname, saved, answers) {
  const asked = [];
  const waiting = new Map();
  globalThis.location = { pathname };
  globalThis.localStorage = { getItem: (k) => saved[k] ?? null, setItem() {}, removeItem() {} };
  globalThis.document = { addEventListener() {} };
  globalThis.fetch = (path) => {
    asked.push(path);
    return new Promise((resolve) => waiting.set(path, () => {
      const body = answers[path];
      const res = { ok: body !== undefined, status: body !== undefined ? 200 : 404, json: async () => body, clone: () => res };
      resolve(res);
    }));
  };
  delete globalThis.natterBoot;
  await import(`../static/assets/js/early.js?${++copy}`);
  const settle = async () => { for (let i = 0; i < 10; i++) await new Promise((r) => setTimeout(r, 0)); };
  return {
    asked,
    boot: globalThis.natterBoot,
    release: async (...paths) => { for (const p of paths) { waiting.get(p)(); await settle(); } },
  };
}

const WS = 'wsp_1';
const tail = `/api/realtime/events?workspace_id=${WS}&include_tail=true&limit=1`;
const channels = `/api/workspaces/${WS}/channels`;
const dms = `/api/dms?workspace_id=${WS}`;
const listings = (over = {}) => ({
  '/api/me': { user: { id: 'usr_ana' } },
  '/api/workspaces': { workspaces: [{ id: 'wsp_0', route_id: 'T0' }, { id: WS, route_id: 'T1' }] },
  [tail]: { tail_cursor: 'cur_1' },
  [channels]: { channels: [{ id: 'chn_a', name: 'alpha', route_id: 'C1' }, { id: 'chn_g', name: 'general', route_id: 'C2' },
    { id: 'chn_u', name: 'updates', route_id: 'C3', unread_count: 4, last_read_seq: 17 }] },
  [dms]: { conversations: [{ id: 'dm_1', route_id: 'D1' }] },
  ...over,
});

test('a first visit asks who and where at once, then the listings, then the messages of #general', async () => {
  const page = await start('/T1', {}, listings());
  assert.deepEqual(page.asked, ['/api/me', '/api/workspaces'], 'nothing of a workspace before the list names it');
  await page.release('/api/me', '/api/workspaces');
  assert.deepEqual(page.asked.slice(2), [tail, channels, dms], 'the workspace the address names');
  await page.release(channels, dms);
  assert.equal(page.asked.length, 5, 'no message is read before the tail cursor is taken');
  await page.release(tail);
  assert.deepEqual(page.asked.slice(5), ['/api/channels/chn_g/messages?limit=100&mode=latest']);
});

test('a return visit starts the last workspace with the list; an unread place opens at its first unread message', async () => {
  const page = await start('/', { 'natter.workspace': WS, [`natter.place.${WS}`]: 'chn_u' }, listings());
  assert.deepEqual(page.asked, ['/api/me', '/api/workspaces', tail, channels, dms]);
  await page.release('/api/workspaces', tail, channels);
  assert.deepEqual(page.asked.slice(5), ['/api/channels/chn_u/messages?limit=100&around_seq=18']);
});

test('a place the address names opens, a conversation once the conversations are listed', async () => {
  const page = await start('/T1/D1', {}, listings());
  await page.release('/api/workspaces', tail, channels);
  assert.equal(page.asked.length, 5, 'D1 is no channel: the conversations may have it');
  await page.release(dms);
  assert.deepEqual(page.asked.slice(5), ['/api/dms/dm_1/messages?limit=100&mode=latest']);
});

test('signed out: who is signed in and nothing more', async () => {
  const page = await start('/', { 'natter.signedOut': '1', 'natter.workspace': WS }, listings());
  await page.release('/api/me', '/api/workspaces');
  assert.deepEqual(page.asked, ['/api/me', '/api/workspaces']);
});

test('an answer goes to its first taker only, and nothing is started early once the page asked itself', async () => {
  const page = await start('/T1', {}, listings());
  const messages = '/api/channels/chn_g/messages?limit=100&mode=latest';
  assert.equal(page.boot.takeEarly(messages), null, 'not started: the page reads it itself');
  const me = page.boot.takeEarly('/api/me');
  assert.ok(me);
  assert.equal(page.boot.takeEarly('/api/me'), null);
  await page.release('/api/me', '/api/workspaces', tail, channels, dms);
  assert.ok(!page.asked.includes(messages), 'a read the page started is not started again');
});

test('the opening place: the last one open unless left, else #general, else the first by name', async () => {
  const { boot } = await start('/', { 'natter.signedOut': '1' }, {});
  const chans = (...list) => new Map(list.map((c) => [c.id, c]));
  const none = new Map();
  localStorage.getItem = (k) => ({ [`natter.place.${WS}`]: 'c3' })[k] ?? null;
  assert.equal(boot.openingPlace(WS, null, chans({ id: 'c1', name: 'general' }, { id: 'c3', name: 'x', joined: false }), none), 'c1');
  assert.equal(boot.openingPlace(WS, null, chans({ id: 'c1', name: 'beta' }, { id: 'c2', name: 'Alpha' }, { id: 'c3', name: 'x' }), none), 'c3');
  localStorage.getItem = () => null;
  assert.equal(boot.openingPlace(WS, null, chans({ id: 'c1', name: 'beta' }, { id: 'c2', name: 'Alpha' }), none), 'c2');
  assert.equal(boot.openingPlace(WS, 'R9', chans({ id: 'c1', name: 'general' }), null), undefined, 'a route no channel has: ask the conversations');
  assert.equal(boot.openingPlace(WS, 'R9', chans({ id: 'c1', name: 'general' }), new Map([['d9', { id: 'd9', route_id: 'R9' }]])), 'd9');
});
