// @ts-check
// lazy/badges.js, fetched with the first edit or deletion the page hears of: an edit or a
// deletion of someone else's unread message may change whether it counts on its place's badge
// (badged in store.js, the listings' mention_count). The store keeps what the event replaced
// (ev.was), so a message the page saw is counted again at once. One it never saw (from before
// the page: the listing may or may not have counted it) has the channels listed again, once for
// a burst, when the change can move a count: it mentions the reader now, the place has a badge
// to lose, or it was deleted (the unread count too); a bot editing old messages that mention no
// one costs no listing. In a conversation every message by the other people counts, so there an
// edit changes nothing and a deletion uncounts one. A message the reader has read changes nothing.
//
// The Threads badge too: an edit that adds the reader's @handle to a thread's root or reply makes
// them follow the thread (docs/messages.md, "Threads one is in"), so the server counts it again.
import { state, badged, isViewing, mentionsMe } from '../store.js';
import { loadChannels, setBadge } from '../actions.js';
import { countThreads } from '../panels.js';

/** @param {NatterEvent} ev */
export function recount(ev) {
  const m = ev.payload && ev.payload.message;
  if (m && !m.deleted_at && m.author_id !== (state.me && state.me.id) && (m.parent_message_id || (m.thread_state || ev.was?.thread_state || {}).reply_count)
    && mentionsMe(m.body, false) && !(ev.was && mentionsMe(ev.was.body, false))) countThreads();
  const p = m && (state.channels.get(m.channel_id) || state.dms.get(m.direct_conversation_id));
  if (!p || !(m.channel_seq > (p.last_read_seq || 0)) || m.author_id === (state.me && state.me.id) || isViewing(p.id)) return;
  const was = ev.was || (p.members && {});
  const n = state.mentions.get(p.id) || 0;
  if (!was) {
    if (m.deleted_at || badged(m, p) || n > 0) relist();
    return;
  }
  const gone = m.deleted_at && !was.deleted_at ? 1 : 0;
  setBadge(p, n + badged(m, p) - badged(was, p), Math.max(0, (p.unread_count || 0) - gone));
}

let relisting = 0; // 1: a listing under way; 2: and one more wanted after it
function relist() {
  if (relisting++) { relisting = 2; return; }
  loadChannels().catch(() => {}).finally(() => {
    const again = relisting > 1;
    relisting = 0;
    if (again) relist();
  });
}
