// lazy/presence.js without a browser: the online set loaded once, then the server's
// presence.changed events, one person's change or several in one event ({changes: [...]}),
// each person's highest version winning.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { frame } from './env.mjs';

const WS = 'wsp_big';
// What the modules touch when imported (boot.js starts its early reads), and the online set.
globalThis.localStorage = { getItem: () => '1', setItem() {}, removeItem() {} };
globalThis.fetch = async (path) => {
  const body = path === `/api/workspaces/${WS}/presence` ? { presence: [{ user_id: 'usr_ana', online: true, version: 5 }] } : {};
  return { ok: true, status: 200, text: async () => JSON.stringify(body) };
};
const { state, apply } = await import('../static/assets/js/store.js');
// The page's constructable style sheets, as far as lazy/presence.js uses them.
globalThis.CSSStyleSheet = class { replaceSync(text) { this.text = text; } };
globalThis.CSS = { escape: (s) => s };
document.adoptedStyleSheets = [];
const { ensure, isOnline, seen } = await import('../static/assets/js/lazy/presence.js');

const change = (user_id, online, version) => ({ user_id, online, status: online ? 'online' : 'offline', version });
const event = (payload, extra = {}) => ({ type: 'presence.changed', cursor: '', workspace_id: WS, payload, ...extra });

test('one event carrying several people changes each of them, the newest version winning', async () => {
  state.wsId = WS;
  await ensure();
  assert.equal(isOnline('usr_ana'), true);

  apply(event(change('usr_ben', true, 6)));
  assert.equal(isOnline('usr_ben'), true, "one person's change keeps its shape");

  apply(event({ changes: [change('usr_ana', false, 7), change('usr_cho', true, 8), change('usr_ben', false, 4), change('usr_dev', true, 9)] }));
  assert.equal(isOnline('usr_ana'), false);
  assert.equal(isOnline('usr_cho'), true);
  assert.equal(isOnline('usr_ben'), true, 'an older version than the one known changes nothing');
  assert.equal(isOnline('usr_dev'), true);

  apply(event({ changes: [change('usr_cho', false, 10), null, { user_id: 'usr_dev', online: false }] }));
  assert.equal(isOnline('usr_cho'), false);
  assert.equal(isOnline('usr_dev'), true, 'a change without a version is ignored, the rest applied');

  apply(event({ changes: [change('usr_ana', true, 11)] }, { channel_id: 'chn_x' }));
  assert.equal(isOnline('usr_ana'), false, "a client's own presence.changed in a channel is not the server's");
  apply({ ...event({ changes: [change('usr_ana', true, 12)] }), workspace_id: 'wsp_other' });
  assert.equal(isOnline('usr_ana'), false, "another workspace's change");
});

test("dots: the sheet marks those online, and them only", () => {
  frame();
  const sheet = document.adoptedStyleSheets.at(-1);
  assert.equal(sheet.text, '.who-usr_ben,.who-usr_dev{--on:"";--off:none}');
  apply(event(change('usr_ben', false, 13)));
  frame();
  assert.equal(sheet.text, '.who-usr_dev{--on:"";--off:none}', 'a change restyles; the sheet is the same one');
  assert.equal(document.adoptedStyleSheets.length, 1);
});

test("a conversation's dot: its other person's, a group's on when anyone else is online", () => {
  state.me = { id: 'usr_me' };
  const people = (...ids) => ({ members: ids.map((id) => ({ id })) });
  assert.deepEqual(seen(people('usr_me', 'usr_dev')), { on: true, label: 'Online' });
  assert.deepEqual(seen(people('usr_me', 'usr_cho')), { on: false, label: 'Offline' });
  assert.deepEqual(seen(people('usr_me', 'usr_cho', 'usr_dev', 'usr_ben')), { on: true, label: '1 of 3 online' });
  assert.deepEqual(seen(people('usr_me', 'usr_cho', 'usr_ben')), { on: false, label: 'Nobody online' });
});
