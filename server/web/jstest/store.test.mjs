// The store without a browser: topics and their one flush per frame, reducers added with on(),
// and what the store's own reducers make of the events of CONTRACT.md's envelope.
import { test, beforeEach } from 'node:test';
import assert from 'node:assert/strict';
import { frame } from './env.mjs';
import { state, touch, subscribe, on, apply, conv, upsertMessage, setEditing, setQuote, setMe, topics } from '../static/assets/js/store.js';
import { typers } from '../static/assets/js/live.js';

const seen = [];
subscribe((t) => seen.push([...t].sort()));

const ME = 'usr_me';
const OTHER = 'usr_ben';
const CH = 'chn_general';

beforeEach(() => {
  frame();
  seen.length = 0;
  state.me = { id: ME, handle: 'ana' };
  state.view = null;
  state.channels = new Map([[CH, { id: CH, name: 'general', last_seq: 2, unread_count: 0, last_read_seq: 2 }]]);
  state.dms = new Map();
  state.messages = new Map();
  state.convs = new Map();
  state.threads = new Map();
  state.mentions = new Map();
  state.typing = new Map();
  state.progress = new Map();
});

const msg = (seq, extra = {}) => ({ id: `msg_${seq}`, channel_id: CH, channel_seq: seq, author_id: OTHER, body: `message ${seq}`, created_at: '2026-11-27T06:00:00Z', ...extra });
const created = (m) => ({ type: 'message.created', channel_id: m.channel_id, payload: { message: m } });

test('topics touched in one frame reach each subscriber once, together', () => {
  touch('sidebar');
  touch('messages', 'sidebar');
  assert.deepEqual(seen, []);
  frame();
  assert.deepEqual(seen, [['messages', 'sidebar']]);
  frame();
  assert.equal(seen.length, 1);
});

test('an unknown topic is refused', () => {
  assert.throws(() => touch(/** @type {any} */ ('uploads')), /unknown topic uploads/);
  assert.ok(topics.includes('messages') && !topics.includes(/** @type {any} */ ('uploads')));
});

test('reducers added with on() run after the store\'s own, and one that throws stops no other', () => {
  const order = [];
  const errors = console.error;
  console.error = () => order.push('logged');
  try {
    on('test.thing', () => { order.push('first'); throw new Error('boom'); });
    on('test.thing', (ev) => { order.push(`second ${ev.payload.n}`); return ['pins']; });
    apply({ type: 'test.thing', payload: { n: 7 } });
  } finally { console.error = errors; }
  assert.deepEqual(order, ['first', 'logged', 'second 7']);
  frame();
  assert.deepEqual(seen, [['pins']]);
  apply({ type: 'nobody.listens', payload: {} });
  frame();
  assert.equal(seen.length, 1);
});

test('message.created joins a loaded window in channel_seq order, once, and counts newer ones as unread', () => {
  const c = conv(CH);
  c.loaded = true;
  for (const seq of [1, 2]) { upsertMessage(msg(seq)); c.ids.push(`msg_${seq}`); }
  apply(created(msg(4)));
  apply(created(msg(3)));
  apply(created(msg(4))); // the socket replays after a resync: nothing twice
  assert.deepEqual(c.ids, ['msg_1', 'msg_2', 'msg_3', 'msg_4']);
  const ch = state.channels.get(CH);
  // Only messages newer than the place's last_seq count: 3 arrived after 4, as a listing read
  // before the socket's cursor would have counted it already.
  assert.equal(ch.unread_count, 1);
  assert.equal(ch.last_seq, 4);
  assert.equal(state.mentions.has(CH), false);
  frame();
  assert.deepEqual(seen, [['messages', 'sidebar', 'typing']]);
});

test('a mention of the reader counts as one; the reader\'s own message and the open place do not count', () => {
  conv(CH).loaded = true;
  apply(created(msg(3, { body: 'hey @Ana, look' })));
  apply(created(msg(4, { body: '@here deploy' })));
  assert.equal(state.mentions.get(CH), 2);
  apply(created(msg(5, { author_id: ME, body: '@ana note to self' })));
  state.view = { kind: 'channel', id: CH };
  apply(created(msg(6)));
  assert.equal(state.channels.get(CH).unread_count, 2);
  assert.equal(state.mentions.get(CH), 2);
});

test('a mention is the server\'s rule: no handle character on either side of the name', () => {
  let seq = 3;
  for (const body of ['mail ops@here.example', '@anastasia, hi', '@channels', '@everyone-else', 'x@ana']) apply(created(msg(seq++, { body })));
  assert.equal(state.mentions.has(CH), false);
  for (const body of ['(@Channel) deploy', '@EVERYONE', 'ask @ana.', '@here']) apply(created(msg(seq++, { body })));
  assert.equal(state.mentions.get(CH), 4);
});

test('a window left open keeps its newest 600 of 701 messages and can load older ones again', () => {
  const c = conv(CH);
  c.loaded = true;
  for (let seq = 3; seq <= 703; seq++) apply(created(msg(seq)));
  assert.equal(c.ids.length, 600);
  assert.equal(c.ids[0], 'msg_104');
  assert.equal(c.hasOlder, true);
  assert.equal(state.messages.has('msg_3'), false);
});

test('a reaction keeps the reader\'s own flag, whoever the event is from', () => {
  upsertMessage({ ...msg(1), reactions: [{ emoji: '👍', count: 1, reacted_by_me: true }] }, true);
  apply({ type: 'reaction.added', payload: { message_id: 'msg_1', emoji: '👍', count: 2, user_id: OTHER } });
  assert.deepEqual(state.messages.get('msg_1').reactions, [{ emoji: '👍', count: 2, reacted_by_me: true }]);
  apply({ type: 'reaction.added', payload: { message_id: 'msg_1', emoji: '🎉', count: 1, user_id: ME } });
  apply({ type: 'reaction.removed', payload: { message_id: 'msg_1', emoji: '👍', count: 0, user_id: OTHER } });
  assert.deepEqual(state.messages.get('msg_1').reactions, [{ emoji: '🎉', count: 1, reacted_by_me: true }]);
  // An edit arriving as an event carries its author's flags, not the reader's: the reader's stay.
  apply({ type: 'message.updated', payload: { message: { ...msg(1), body: 'edited', reactions: [{ emoji: '🎉', count: 1, reacted_by_me: false }] } } });
  assert.equal(state.messages.get('msg_1').body, 'edited');
  assert.equal(state.messages.get('msg_1').reactions[0].reacted_by_me, true);
});

test('channel.updated changes a channel and keeps its read state', () => {
  state.channels.get(CH).unread_count = 3;
  apply({ type: 'channel.updated', payload: { channel: { id: CH, name: 'town-square', display_title: 'Town' } } });
  const ch = state.channels.get(CH);
  assert.equal(ch.name, 'town-square');
  assert.equal(ch.unread_count, 3);
  assert.equal(ch.last_read_seq, 2);
});

test('typing: others are shown until their message arrives; the reader never', () => {
  apply({ type: 'typing.started', channel_id: CH, payload: { user_id: OTHER } });
  apply({ type: 'typing.started', channel_id: CH, payload: { user_id: ME } });
  assert.deepEqual(typers(CH), [OTHER]);
  apply({ type: 'typing.started', channel_id: CH, payload: { user_id: 'usr_cy' } });
  state.typing.get(CH).set('usr_cy', Date.now() - 1); // quiet for longer than a line shows
  assert.deepEqual(typers(CH), [OTHER]);
  assert.deepEqual(typers('chn_elsewhere'), []);
  conv(CH).loaded = true;
  apply(created(msg(3)));
  assert.equal(state.typing.get(CH).size, 0);
});

test('agent.progress keeps a bot\'s lines until it says it is done', () => {
  const ev = (payload) => ({ type: 'agent.progress', channel_id: CH, payload: { user_id: 'usr_bot', ...payload } });
  apply(ev({ text: 'reading the logs' }));
  apply(ev({ text: 'found it' }));
  const block = state.progress.get(CH).get('usr_bot ');
  assert.deepEqual(block.lines, ['reading the logs', 'found it']);
  apply(ev({ text: 'rewritten', op: 'replace' }));
  assert.deepEqual(block.lines, ['rewritten']);
  apply(ev({ status: 'done' }));
  assert.equal(state.progress.get(CH).size, 0);
  frame();
  assert.deepEqual(seen, [['progress']]);
});

test('what views change goes through functions that name their topics', () => {
  setEditing('msg_1');
  setQuote({ id: 'msg_2' });
  setMe({ display_name: 'Ana Lima' });
  assert.equal(state.editing, 'msg_1');
  assert.equal(state.quote.id, 'msg_2');
  assert.deepEqual(state.me, { id: ME, handle: 'ana', display_name: 'Ana Lima' });
  frame();
  assert.deepEqual(seen, [['messages', 'quote', 'thread']]);
  setMe(null);
  assert.equal(state.me, null);
});
