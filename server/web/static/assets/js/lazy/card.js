// @ts-check
// lazy/card.js is a person's profile card, opened by a click on a name or an avatar (a message's
// author, a row of the people panel or of a channel's members; features.js loads this module at
// the first such click): picture, name, handle, role, whether they are online, their local time
// (their time zone, and how far it is from the viewer's) and "Message", which opens (or starts)
// the direct conversation with them. Esc, the close button or a click outside closes it; at a
// phone's width it is a sheet at the bottom of the screen (assets/people.css).
import * as api from '../api.js';
import { h, replace, icon, avatar, displayName } from '../dom.js';
import { state, subscribe } from '../store.js';
import * as actions from '../actions.js';
import { ensure, dot, isOnline, styles } from './presence.js';

let card = null; // { el, userId, anchor, member, timer }

// openCard shows userId's card by anchor (the element clicked); a second click on the same
// person closes it.
export async function openCard(userId, anchor) {
  if (card && card.userId === userId) { closeCard(); return; }
  closeCard();
  await styles();
  if (card) closeCard();
  const el = h('div', { class: 'person-card', role: 'dialog', 'aria-modal': 'false', 'aria-label': 'Profile', tabIndex: -1 });
  card = { el, userId, anchor, member: null, timer: 0, back: document.activeElement };
  const known = state.users.get(userId);
  draw(known ? { user: known } : null);
  document.body.appendChild(el);
  place();
  ensure().catch(() => {});
  try {
    const res = await api.get(`/api/workspaces/${state.wsId}/members/${encodeURIComponent(userId)}`);
    if (!card || card.userId !== userId) return;
    card.member = res.member;
    draw(res.member);
  } catch (e) {
    if (card && card.userId === userId) replace(el, h('p', { class: 'error pad', role: 'alert' }, e.message), closeButton());
  }
  if (card && card.userId === userId) card.timer = setInterval(() => draw(card.member), 30000);
}

export function closeCard() {
  if (!card) return;
  clearInterval(card.timer);
  card.el.remove();
  const back = card.back;
  card = null;
  if (back && back.isConnected && back.focus) back.focus();
}

const closeButton = () => h('button', { class: 'icon-btn card-close', title: 'Close (Esc)', 'aria-label': 'Close', onclick: closeCard }, icon('close'));

// localTime is the person's time now and its distance from the viewer's, or null without a zone.
export function localTime(tz, now = new Date()) {
  if (!tz) return null;
  let time;
  try {
    time = new Intl.DateTimeFormat(undefined, { hour: 'numeric', minute: '2-digit', timeZone: tz }).format(now);
  } catch { return null; }
  const offset = (zone) => {
    const parts = new Intl.DateTimeFormat('en-US', { timeZone: zone, hourCycle: 'h23', year: 'numeric', month: 'numeric', day: 'numeric', hour: 'numeric', minute: 'numeric' })
      .formatToParts(now).reduce((o, p) => ({ ...o, [p.type]: +p.value }), /** @type {Record<string, number>} */ ({}));
    return (Date.UTC(parts.year, parts.month - 1, parts.day, parts.hour, parts.minute) - Math.floor(now.getTime() / 60000) * 60000) / 60000;
  };
  const diff = offset(tz) - offset(Intl.DateTimeFormat().resolvedOptions().timeZone);
  const hours = Math.abs(diff) / 60;
  const amount = Number.isInteger(hours) ? `${hours} h` : `${Math.floor(hours)} h ${Math.abs(diff) % 60} min`;
  return { time, zone: tz.replace(/_/g, ' '), relation: diff === 0 ? 'same time as you' : `${amount} ${diff > 0 ? 'ahead of' : 'behind'} you` };
}

function draw(member) {
  if (!card) return;
  const u = (member && member.user) || { id: card.userId };
  const me = state.me && state.me.id === u.id;
  const local = localTime(u.time_zone);
  const online = isOnline(u.id);
  card.el.setAttribute('aria-label', `Profile of ${displayName(u)}`);
  replace(card.el,
    closeButton(),
    h('div', { class: 'card-head' },
      h('span', { class: 'card-avatar' }, avatar(u, 'lg'), dot(u.id)),
      h('div', { class: 'card-names' },
        h('h2', { class: 'card-name' }, displayName(u)),
        u.handle ? h('p', { class: 'muted card-handle' }, `@${u.handle}`) : null,
        h('p', { class: 'card-tags' },
          u.kind === 'bot' ? h('span', { class: 'tag bot' }, 'bot') : member && member.role && member.role !== 'member' ? h('span', { class: 'tag' }, member.role) : null,
          h('span', { class: `card-presence${online ? ' online' : ''}` }, online ? 'Online' : 'Offline')))),
    // Until the directory answers, the time is left out rather than said to be unknown.
    u.kind === 'bot' || !card.member ? null : h('p', { class: 'card-time' },
      local ? [h('strong', { class: 'card-local' }, local.time), ` local time · ${local.relation}`, h('span', { class: 'muted card-zone' }, local.zone)]
        : h('span', { class: 'muted' }, 'Local time not shared')),
    h('div', { class: 'card-actions' },
      u.deleted_at ? null : h('button', { class: 'btn primary card-message', onclick: message }, me ? 'Message yourself' : 'Message'),
      me ? h('button', { class: 'btn card-edit', onclick: () => { closeCard(); actions.openPanel({ kind: 'profile' }); } }, 'Edit profile') : null));
}

async function message() {
  const id = card.userId;
  closeCard();
  // Where a panel covers the conversation, it gives way to it; not one opened after the
  // conversation was drawn, while its messages still loaded.
  const covering = matchMedia('(max-width: 800px)').matches ? state.panel : null;
  try {
    await actions.openDM(state.me && id === state.me.id ? [] : [id]);
    if (covering && state.panel === covering) actions.openPanel(null);
  } catch (e) { actions.toast(e.message); }
}

// place puts the card beside what was clicked, inside the window; narrow windows get a sheet
// from the bottom (people.css), which needs no position.
function place() {
  const { el, anchor } = card;
  if (matchMedia('(max-width: 600px)').matches || !anchor || !anchor.isConnected) { el.classList.add('sheet'); el.focus(); return; }
  const r = anchor.getBoundingClientRect();
  const w = el.offsetWidth, hgt = el.offsetHeight;
  const left = Math.max(8, Math.min(r.left, innerWidth - w - 8));
  const top = r.bottom + 6 + hgt <= innerHeight - 8 ? r.bottom + 6 : Math.max(8, r.top - hgt - 6);
  el.style.left = `${left}px`;
  el.style.top = `${top}px`;
  el.focus();
}

document.addEventListener('keydown', (e) => { if (e.key === 'Escape' && card) { e.stopPropagation(); closeCard(); } }, true);
document.addEventListener('mousedown', (e) => {
  if (card && !card.el.contains(e.target) && !(card.anchor && card.anchor.contains(e.target))) closeCard();
}, true);
// Presence redraws the card in place; leaving the workspace closes it.
let ws = state.wsId;
subscribe((topics) => {
  if (!card) { ws = state.wsId; return; }
  if (state.wsId !== ws) { ws = state.wsId; closeCard(); return; }
  if (topics.has('presence')) draw(card.member);
});
