// @ts-check
// views/marks.js: a pinned message carries a "Pinned" mark in the list. The channel's pins are
// read once it is open (after its messages, so the first paint does not wait) and kept by
// pin.added and pin.removed.
import { h, icon } from '../dom.js';
import * as api from '../api.js';
import { state, touch, on, subscribe, conv } from '../store.js';
import { registerRowPart } from './registry.js';

const pins = new Map(); // channel id → Set of pinned message ids

const isPinned = (m) => !!(m.channel_id && !m.parent_message_id && pins.get(m.channel_id)?.has(m.id));

registerRowPart({
  key: (m) => (isPinned(m) ? 'pinned' : ''),
  render: (m) => (isPinned(m) ? h('span', { class: 'pinned-mark' }, icon('pin'), 'Pinned') : null),
});

async function load(channelId) {
  pins.set(channelId, new Set());
  try {
    const res = await api.get(`/api/channels/${channelId}/pins`);
    const list = res.messages || (res.pins || []).map((p) => p.message || { id: p.message_id });
    for (const m of list) if (m && m.id) pins.get(channelId).add(m.id);
    touch('messages');
  } catch { pins.delete(channelId); } // read again the next time the channel opens
}

subscribe((topics) => {
  const v = state.view;
  if ((topics.has('view') || topics.has('messages')) && v && v.kind === 'channel' && !pins.has(v.id) && conv(v.id).loaded) load(v.id);
});

for (const type of ['pin.added', 'pin.removed']) {
  on(type, (ev) => {
    const p = ev.payload || {};
    const set = pins.get(p.channel_id || ev.channel_id);
    if (!set) return [];
    if (type === 'pin.added') set.add(p.message_id); else set.delete(p.message_id);
    return ['messages', 'thread'];
  });
}
