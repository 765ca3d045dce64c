// @ts-check
// views/moderation/standing.js tells the reader, above the composer, what moderation does to
// their own posting: a guest's posts left today (three a day, renewed at midnight UTC), a
// timeout with the time left, a block. While the API would refuse a post the composer is
// disabled; a post that is refused anyway still shows the API's sentence ("Not sent — …").
import { h, replace } from '../../dom.js';
import { state, subscribe, on, touch } from '../../store.js';
import * as actions from '../../actions.js';
import { standing, loadStanding, rolesChanged, running, timeLeft, isManager } from './common.js';

let banner = null;
let lastWs = null;
let lastConn = null;

const refresh = () => loadStanding().catch(() => {});

// The banner sits just above the composer; it is placed once the shell has drawn it.
function place() {
  if (banner && banner.isConnected) return banner;
  const composer = document.querySelector('form.composer');
  if (!composer) return null;
  banner = h('div', { class: 'standing', role: 'status', 'aria-live': 'polite', hidden: true });
  composer.before(banner);
  return banner;
}

// refusal is why the API would refuse a post now, or '' when it would take one.
function refusal(m) {
  if (!m) return '';
  if (m.blocked_at) return 'You are blocked in this workspace: you cannot post, react or upload.';
  if (running(m.timeout_until)) {
    return `You are timed out for ${timeLeft(m.timeout_until)} more (until ${new Date(m.timeout_until).toLocaleTimeString()}): you cannot post until then.`;
  }
  if (m.role === 'guest' && m.posts_remaining === 0) {
    return `You have used your ${m.post_limit} guest posts for today; more tomorrow (the count renews at midnight UTC).`;
  }
  return '';
}

function render() {
  const el = place();
  if (!el) return;
  const m = standing.wsId === state.wsId ? standing.member : null;
  const no = refusal(m);
  const guestLine = m && m.role === 'guest' && !no
    ? `Guest: ${m.posts_remaining} of ${m.post_limit} posts left today. A moderator can make you a full member.` : '';
  const c = state.view && state.view.kind === 'channel' && state.channels.get(state.view.id);
  const room = !no && !guestLine && isManager() && c && c.name === 'guest'
    ? ['This is the guests’ waiting room. ', h('button', { type: 'button', class: 'link', onclick: () => actions.openPanel({ kind: 'guests' }) }, 'See who is waiting and make them members')] : null;
  el.hidden = !no && !guestLine && !room;
  el.classList.toggle('refused', !!no);
  replace(el, no || guestLine || room);
  // The thread panel's reply box too: a reply is a post.
  for (const composer of document.querySelectorAll('.composer')) {
    for (const c of composer.querySelectorAll('textarea, button')) c.toggleAttribute('disabled', !!no);
    composer.classList.toggle('refused', !!no);
  }
}

subscribe((t) => {
  if (state.phase !== 'app') return;
  if (state.wsId !== lastWs) { lastWs = state.wsId; standing.member = null; if (state.wsId) refresh(); }
  if (state.conn !== lastConn) { lastConn = state.conn; if (state.conn === 'open') refresh(); }
  if (/** @type {Topic[]} */ (['standing', 'view', 'conn', 'sidebar', 'panel', 'thread']).some((x) => t.has(x))) render();
});

const me = () => state.me && state.me.id;
on('member.moderation_updated', (ev) => { if ((ev.payload || {}).user_id === me()) refresh(); });
on('workspace.ownership_transferred', () => { rolesChanged().then(refresh).catch(() => {}); });
// A guest's own post spends one of the day's three.
on('message.created', (ev) => {
  const m = ev.payload && ev.payload.message;
  if (standing.member && standing.member.role === 'guest' && m && m.author_id === me()) refresh();
});

// The time left counts down; a guest, who hears of no promotion over the socket (guests see
// only their channel's events), asks again now and then.
let ticks = 0;
setInterval(() => {
  const m = standing.member;
  if (!m || state.phase !== 'app') return;
  ticks++;
  if (running(m.timeout_until)) touch('standing');
  else if (m.timeout_until) refresh(); // it just ran out
  else if (m.role === 'guest' && ticks % 3 === 0) refresh();
}, 5000);
