// @ts-check
// reading.js opens a place and reads it: the page of messages around the first unread one (with
// the "New messages" line), older and newer pages as the reader scrolls, a window of at most 600
// messages, and the read state sent back to the server.
import * as api from './api.js';
import { state, touch, conv, upsertMessage } from './store.js';
import { restoreUnsent } from './send.js';
import { defaultPlace, placePath, pagePath, firstPage } from './boot.js';

export const viewOf = (placeId) => (state.dms.has(placeId) ? { kind: 'dm', id: placeId } : { kind: 'channel', id: placeId });

// pickDefaultPlace is the place last open in this workspace, else #general, else the first by
// name (boot.js's defaultPlace: the page's inline script opens the same one early).
export const pickDefaultPlace = () => defaultPlace(state.wsId, state.channels, state.dms);

export { placePath };
// openPlace shows a channel or conversation: at the first unread message, or at the bottom.
export async function openPlace(view, aroundSeq) {
  state.view = view;
  state.editing = null;
  localStorage.setItem(`natter.place.${state.wsId}`, view.id);
  if (state.panel && state.panel.kind === 'pins' && view.kind !== 'channel') state.panel = null;
  state.mentions.delete(view.id);
  const place = state.channels.get(view.id) || state.dms.get(view.id) || {};
  const c = conv(view.id);
  restoreUnsent(view.id);
  touch('view', 'sidebar', 'header', 'messages', 'panel');
  history.replaceState(null, '', routeOf(view));
  // Every opening draws the "New messages" line at the first unread message (none when all is
  // read), loading around it when the window in memory does not hold it.
  const first = firstPage(place);
  const unread = first.around_seq || null;
  c.firstUnreadSeq = unread;
  c.newCount = unread ? place.unread_count : 0;
  const held = unread && c.loaded && c.ids.some((id) => state.messages.get(id)?.channel_seq === unread);
  if (!c.loaded || aroundSeq || (unread && !held)) {
    await loadPage(view, aroundSeq ? { around_seq: aroundSeq } : first, true);
  }
  if (aroundSeq || unread) {
    c.focus = aroundSeq ? { seq: aroundSeq, highlight: true } : { seq: unread };
    touch('messages');
  }
  // A place left before its messages arrived was not read.
  if (state.view === view) markRead(view, 0);
}

function routeOf(view) {
  const ws = state.workspaces.find((w) => w.id === state.wsId);
  const place = state.channels.get(view.id) || state.dms.get(view.id);
  return ws && place ? `/${ws.route_id}/${place.route_id}` : '/';
}

// loadPage reads one page of root messages; reset replaces the window, otherwise the page joins
// it on the side it was asked for.
export async function loadPage(view, params, reset = false) {
  const c = conv(view.id);
  if (c.busy) return;
  c.busy = true;
  try {
    const res = await api.get(pagePath(view, params));
    const ids = (res.messages || []).map((m) => upsertMessage(m, true).id);
    if (reset) {
      c.ids = ids;
      c.hasOlder = res.has_older;
      c.hasNewer = res.has_newer;
    } else if (params.before_seq) {
      c.ids = ids.filter((id) => !c.ids.includes(id)).concat(c.ids);
      c.hasOlder = res.has_older;
    } else {
      c.ids = c.ids.concat(ids.filter((id) => !c.ids.includes(id)));
      c.hasNewer = res.has_newer;
    }
    c.loaded = true;
    trim(c, params.before_seq ? 'newer' : 'older');
  } finally {
    c.busy = false;
  }
  touch('messages');
}

// A window keeps at most 600 messages: past that, the side away from the reader is dropped and
// loaded again on the way back, so memory stays flat however far back someone scrolls.
const KEEP = 600;
function trim(c, side) {
  if (c.ids.length <= KEEP) return;
  const drop = c.ids.length - KEEP + 100;
  const gone = side === 'newer' ? c.ids.splice(c.ids.length - drop, drop) : c.ids.splice(0, drop);
  if (side === 'newer') c.hasNewer = true; else c.hasOlder = true;
  const inThreads = new Set([...state.threads.keys()]);
  for (const id of gone) if (!inThreads.has(id)) state.messages.delete(id);
}

export async function loadOlder(view) {
  const c = conv(view.id);
  if (!c.hasOlder || c.busy || !c.ids.length) return;
  // Older pages are the API's largest: someone scrolling back is usually going far.
  await loadPage(view, { before_seq: state.messages.get(c.ids[0]).channel_seq, limit: 200 });
}

export async function loadNewer(view) {
  const c = conv(view.id);
  if (!c.hasNewer || c.busy || !c.ids.length) return;
  await loadPage(view, { after_seq: state.messages.get(c.ids[c.ids.length - 1]).channel_seq });
}

// readUpTo records place read up to seq, as the server is (or was just) told.
export function readUpTo(place, seq) {
  place.last_read_seq = seq;
  place.unread_count = 0;
  state.mentions.delete(place.id);
  touch('sidebar');
}

// setBadge sets a place's badge (none below 1) and its unread count.
export function setBadge(place, n, unread = place.unread_count) {
  place.unread_count = unread;
  if (n > 0) state.mentions.set(place.id, n); else state.mentions.delete(place.id);
  touch('sidebar');
}

// setConv sets how a place's list is drawn next: focus ({ seq, highlight }) and toBottom.
export function setConv(placeId, patch) { Object.assign(conv(placeId), patch); }

export async function jumpToLatest(view) {
  const c = conv(view.id);
  c.focus = null;
  await loadPage(view, { mode: 'latest' }, true);
}

let readTimer = null, readView = null;
// markRead records the newest message seen: at once when a place opens, then at most every 500 ms
// while messages arrive. Leaving a place records its pending read first (Alt+↓ moves on fast).
export function markRead(view, delay = 500) {
  clearTimeout(readTimer);
  if (readView && readView.id !== view.id) recordRead(readView);
  readView = view;
  readTimer = setTimeout(() => { readView = null; recordRead(view); }, delay);
}

async function recordRead(view) {
  const c = conv(view.id);
  const place = state.channels.get(view.id) || state.dms.get(view.id);
  if (!place || c.hasNewer || !c.ids.length) return;
  const seq = state.messages.get(c.ids[c.ids.length - 1]).channel_seq;
  if (!seq || (place.last_read_seq >= seq && !place.unread_count)) return;
  readUpTo(place, seq);
  await api.post(`${placePath(view)}/read`, { seq }).catch(() => {});
}
