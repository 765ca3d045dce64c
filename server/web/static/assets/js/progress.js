// progress.js keeps agents' live progress: agent.progress ephemeral events, one block per bot
// per place (the server sets payload.user_id to the publishing bot, so no one can report for
// another). A block ends when the bot says so, or when it has been quiet for EXPIRE ms.
import { state } from './store.js';

export const EXPIRE = 30000;
const ENDED = new Set(['end', 'done', 'finish', 'finished', 'complete', 'completed', 'failed', 'error', 'cancelled', 'canceled']);
const MAX_LINES = 50; // a chatty agent keeps its newest lines
const MAX_TEXT = 500;

const text = (p) => {
  const t = [p.text, p.delta, p.message, p.label, p.status].find((v) => typeof v === 'string' && v !== '');
  return t === undefined ? '' : t.slice(0, MAX_TEXT);
};

export function applyProgress(ev) {
  const p = ev.payload || {};
  const placeId = ev.channel_id || ev.direct_conversation_id || p.channel_id || p.direct_conversation_id;
  const botId = p.user_id;
  if (!placeId || !botId) return [];
  let place = state.progress.get(placeId);
  if (!place) { place = new Map(); state.progress.set(placeId, place); }
  if (p.done === true || ENDED.has(String(p.op || '').toLowerCase()) || ENDED.has(String(p.state || p.status || '').toLowerCase())) {
    place.delete(botId);
    return ['progress'];
  }
  const turn = p.turn_id || '';
  let block = place.get(botId);
  if (!block || block.turn !== turn) { block = { turn, lines: [], started: Date.now() }; place.set(botId, block); }
  const t = text(p);
  if (t) {
    if (String(p.op || 'append').toLowerCase() === 'append') block.lines.push(t);
    else block.lines = [t];
    if (block.lines.length > MAX_LINES) block.lines.splice(0, block.lines.length - MAX_LINES);
  }
  block.until = Date.now() + EXPIRE;
  return ['progress'];
}

// live returns the place's blocks still running, dropping the expired ones.
export function live(placeId) {
  const place = state.progress.get(placeId);
  if (!place) return [];
  const now = Date.now();
  for (const [id, b] of place) if (b.until <= now) place.delete(id);
  if (!place.size) state.progress.delete(placeId);
  return [...place.entries()];
}
