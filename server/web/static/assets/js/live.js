// @ts-check
// live.js keeps what ephemeral events say for a while: who is typing, and agents' progress,
// one block per bot per place, or per bot and message when the progress names a message
// (payload.message_id, or payload.thread_root_id for the thread an agent is answering): that
// block shows under the message. The server sets payload.user_id to the publishing bot, so no
// one can report for another. A block ends when the bot says so, or after EXPIRE ms of quiet.
import { state, on } from './store.js';

export const EXPIRE = 30000;
const ENDED = new Set(['end', 'done', 'finish', 'finished', 'complete', 'completed', 'failed', 'error', 'cancelled', 'canceled']);
const MAX_LINES = 50; // a chatty agent keeps its newest lines
const MAX_TEXT = 500;
const ID = /^msg_[A-Za-z0-9_-]{1,80}$/;

const text = (p) => {
  const t = [p.text, p.delta, p.message, p.label, p.status].find((v) => typeof v === 'string' && v !== '');
  return t === undefined ? '' : t.slice(0, MAX_TEXT);
};

// messageOf is the message a payload names, or '' when it names none.
const messageOf = (p) => [p.message_id, p.thread_root_id].find((v) => typeof v === 'string' && ID.test(v)) || '';

on('agent.progress', (ev) => {
  const p = ev.payload || {};
  const placeId = ev.channel_id || ev.direct_conversation_id || p.channel_id || p.direct_conversation_id;
  const botId = p.user_id;
  if (!placeId || !botId) return [];
  const messageId = messageOf(p);
  // A block under a message is drawn by the message list and the thread panel.
  /** @type {Topic[]} */
  const topics = messageId ? ['progress', 'messages', 'thread'] : ['progress'];
  let place = state.progress.get(placeId);
  if (!place) { place = new Map(); state.progress.set(placeId, place); }
  const key = `${botId} ${messageId}`;
  if (p.done === true || ENDED.has(String(p.op || '').toLowerCase()) || ENDED.has(String(p.state || p.status || '').toLowerCase())) {
    place.delete(key);
    return topics;
  }
  const turn = p.turn_id || '';
  let block = place.get(key);
  if (!block || block.turn !== turn) { block = { bot: botId, messageId, turn, lines: [], started: Date.now() }; place.set(key, block); }
  const t = text(p);
  if (t) {
    if (String(p.op || 'append').toLowerCase() === 'append') block.lines.push(t);
    else block.lines = [t];
    if (block.lines.length > MAX_LINES) block.lines.splice(0, block.lines.length - MAX_LINES);
  }
  block.until = Date.now() + EXPIRE;
  return topics;
});

/** @returns {Topic[]} */
function typing(ev, started) {
  const p = ev.payload || {};
  const placeId = ev.channel_id || ev.direct_conversation_id || p.channel_id || p.direct_conversation_id;
  const userId = p.user_id || ev.actor_id;
  if (!placeId || !userId || (state.me && userId === state.me.id)) return [];
  let m = state.typing.get(placeId);
  if (!m) { m = new Map(); state.typing.set(placeId, m); }
  if (started) m.set(userId, Date.now() + 6000); else m.delete(userId);
  return ['typing'];
}
on('typing.started', (ev) => typing(ev, true));
on('typing.stopped', (ev) => typing(ev, false));

// typers lists who is typing in a place, dropping those quiet too long.
export function typers(placeId) {
  const m = state.typing.get(placeId);
  const now = Date.now();
  if (m) for (const [id, until] of m) if (until <= now) m.delete(id);
  return m ? [...m.keys()] : [];
}

// live returns the place's blocks still running, dropping the expired ones; expired says
// whether one of those dropped was under a message (its row has to be drawn again).
export function live(placeId) {
  const place = state.progress.get(placeId);
  if (!place) return { blocks: [], expired: false };
  const now = Date.now();
  let expired = false;
  for (const [key, b] of place) if (b.until <= now) { place.delete(key); expired = expired || !!b.messageId; }
  if (!place.size) state.progress.delete(placeId);
  return { blocks: [...place.values()], expired };
}

// under returns the running blocks shown under message m.
export function under(m) {
  const place = state.progress.get(m.channel_id || m.direct_conversation_id);
  if (!place) return [];
  const now = Date.now();
  return [...place.values()].filter((b) => b.messageId === m.id && b.until > now);
}
