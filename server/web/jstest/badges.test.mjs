// lazy/badges.js without a browser: an edit or a deletion of someone else's unread message moves
// its place's badge by the rule of the listings' mention_count, once however often the event
// comes (the socket replays from a cursor); a message the page never saw has the channels listed
// again; a message already read, one's own and a thread reply move nothing.
import { test, beforeEach } from 'node:test';
import assert from 'node:assert/strict';
import { frame } from './env.mjs';

const WS = 'wsp_1', CH = 'chn_1', DM = 'dm_1', ME = 'usr_ana', BEN = 'usr_ben';
globalThis.localStorage = { getItem: () => null, setItem() {}, removeItem() {} };
globalThis.window = globalThis;
globalThis.addEventListener = () => {};
let listing = []; // what GET /api/workspaces/{id}/channels answers
const asked = [];
globalThis.fetch = async (path) => {
  asked.push(path);
  const body = path === `/api/workspaces/${WS}/channels` ? { channels: listing } : {};
  return { ok: true, status: 200, text: async () => JSON.stringify(body), json: async () => body };
};
const { state, apply } = await import('../static/assets/js/store.js');
await import('../static/assets/js/actions.js');

const msg = (seq, body, extra = {}) => ({ id: `msg_${seq}`, channel_id: CH, channel_seq: seq, author_id: BEN, body, created_at: '2026-11-27T06:00:00Z', ...extra });
const ev = (type, m) => ({ type, workspace_id: WS, channel_id: m.channel_id, payload: { message: m } });
// settle lets the lazy module load and a listing answer.
const settle = async () => { for (let i = 0; i < 20; i++) await new Promise((r) => setTimeout(r, 1)); frame(); };
const badge = (id = CH) => state.mentions.get(id) || 0;

beforeEach(() => {
  frame();
  state.me = { id: ME, handle: 'ana' };
  state.wsId = WS;
  state.view = null;
  state.channels = new Map([[CH, { id: CH, name: 'build', last_seq: 3, last_read_seq: 1, unread_count: 2, mention_count: 1 }]]);
  state.dms = new Map([[DM, { id: DM, members: [{ id: ME }, { id: BEN }], last_seq: 0, last_read_seq: 0, unread_count: 0 }]]);
  state.messages = new Map();
  state.mentions = new Map([[CH, 1]]);
  asked.length = 0;
});

test('a message the page saw: an edit adding a mention counts it once, removing it uncounts it', async () => {
  apply(ev('message.created', msg(4, 'nothing yet')));
  assert.equal(badge(), 1);
  const edited = ev('message.updated', msg(4, 'now @ana'));
  apply(edited);
  apply(ev('message.updated', msg(4, 'now @ana'))); // the same change, replayed
  await settle();
  assert.equal(badge(), 2);
  apply(ev('message.updated', msg(4, 'now @channel, still')));
  await settle();
  assert.equal(badge(), 2, 'a broadcast instead of the handle: still one mention');
  apply(ev('message.updated', msg(4, 'no one after all')));
  await settle();
  assert.equal(badge(), 1);
  assert.deepEqual(asked, [], 'no listing asked for');
});

test('a deletion uncounts the mention and the unread message, once', async () => {
  apply(ev('message.created', msg(4, '@here standup')));
  assert.equal(badge(), 2);
  assert.equal(state.channels.get(CH).unread_count, 3);
  const gone = msg(4, '', { deleted_at: '2026-11-27T06:01:00Z' });
  apply(ev('message.deleted', gone));
  apply(ev('message.deleted', gone));
  await settle();
  assert.equal(badge(), 1);
  assert.equal(state.channels.get(CH).unread_count, 2);
});

test('a message from before the page: the channels are listed again, once for a burst', async () => {
  listing = [{ id: CH, name: 'build', last_seq: 3, last_read_seq: 1, unread_count: 2, mention_count: 2 }];
  apply(ev('message.updated', msg(2, 'an old one, now for @ana')));
  apply(ev('message.updated', msg(3, 'another old one, edited')));
  apply(ev('message.deleted', msg(2, '', { deleted_at: '2026-11-27T06:01:00Z' })));
  await settle();
  assert.equal(badge(), 2, "the listing's count");
  assert.equal(asked.filter((p) => p.endsWith('/channels')).length, 2, 'one listing, and one more for the changes that came while it was on its way');
});

test('a change to a message from before the page that cannot move a count lists nothing', async () => {
  state.mentions = new Map();
  apply(ev('message.updated', msg(2, 'an old one, still for no one')));
  await settle();
  assert.deepEqual(asked, []);
  apply(ev('message.updated', msg(3, 'an old one, now for @ana')));
  await settle();
  assert.equal(asked.filter((p) => p.endsWith('/channels')).length, 1, 'a mention now: the listing says whether it is new');
});

test('a read message, one of my own, a reply and the open place move nothing', async () => {
  apply(ev('message.updated', msg(1, '@ana read long ago')));
  apply(ev('message.updated', msg(5, '@channel mine', { author_id: ME })));
  apply(ev('message.updated', msg(6, '@ana in a thread', { channel_seq: null, parent_message_id: 'msg_2' })));
  await settle();
  assert.equal(badge(), 1);
  state.view = { kind: 'channel', id: CH };
  apply(ev('message.updated', msg(2, '@ana while she looks')));
  await settle();
  assert.equal(badge(), 1);
  assert.deepEqual(asked.filter((p) => !p.includes('/threads')), []);
});

test("an edit adding the reader's handle in a thread counts the Threads badge again, once", async () => {
  const threads = () => asked.filter((p) => p === `/api/workspaces/${WS}/threads?limit=1`).length;
  const reply = (body, extra = {}) => msg(7, body, { channel_seq: null, parent_message_id: 'msg_2', ...extra });
  apply(ev('message.created', reply('who reviews?')));
  apply(ev('message.updated', reply('who reviews? @ana')));
  apply(ev('message.updated', reply('who reviews? @ana'))); // replayed: it mentioned her already
  apply(ev('message.updated', reply('who reviews? @Ana, please')));
  await settle();
  assert.equal(threads(), 1, 'a reply that now names her');
  apply(ev('message.updated', msg(2, 'plan? @ana', { thread_state: { reply_count: 3 } })));
  apply(ev('message.updated', msg(3, 'no replies @ana')));
  apply(ev('message.updated', msg(8, 'a thread @channel', { thread_state: { reply_count: 1 } })));
  apply(ev('message.updated', reply('mine @ana', { id: 'msg_9', author_id: ME })));
  await settle();
  assert.equal(threads(), 2, 'a root with replies; not one without, not a broadcast (no follower), not my own');
});

test('a conversation counts every message: an edit changes nothing, a deletion uncounts one', async () => {
  const dm = (seq, body, extra = {}) => msg(seq, body, { channel_id: undefined, direct_conversation_id: DM, ...extra });
  apply({ type: 'message.created', workspace_id: WS, payload: { message: dm(1, 'are you there?') } });
  assert.equal(badge(DM), 1);
  apply({ type: 'message.updated', workspace_id: WS, payload: { message: dm(1, 'are you there, Ana?') } });
  await settle();
  assert.equal(badge(DM), 1);
  apply({ type: 'message.deleted', workspace_id: WS, payload: { message: dm(1, '', { deleted_at: '2026-11-27T06:01:00Z' }) } });
  await settle();
  assert.equal(badge(DM), 0);
  assert.equal(state.dms.get(DM).unread_count, 0);
});
