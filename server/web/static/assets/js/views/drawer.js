// @ts-check
// views/drawer.js: on a window of 800 px or less the sidebar is a drawer over the conversation,
// opened by the header's menu button and closed by picking a place, the backdrop, or Esc, so
// channels, conversations, menus and sign-out stay reachable on a phone or a half-screen window.
import { h } from '../dom.js';

const narrow = window.matchMedia('(max-width: 800px)');
let toggle = null;

export const backdrop = h('div', { class: 'drawer-backdrop', 'aria-hidden': 'true', onclick: () => closeDrawer(true) });

export const isDrawerOpen = () => document.body.classList.contains('drawer-open');

// openDrawer shows the sidebar and puts the keyboard on the place being read (or the first).
export function openDrawer(from) {
  toggle = from || toggle;
  document.body.classList.add('drawer-open');
  if (toggle) toggle.setAttribute('aria-expanded', 'true');
  const side = document.querySelector('.sidebar');
  if (side) side.inert = false;
  const place = document.querySelector('.sidebar .place.active') || document.querySelector('.sidebar .place');
  if (place) place.focus();
}

// closeDrawer hides it; giveFocus returns the keyboard to the menu button (Esc, the backdrop).
export function closeDrawer(giveFocus = false) {
  if (!isDrawerOpen()) return;
  document.body.classList.remove('drawer-open');
  if (toggle) toggle.setAttribute('aria-expanded', 'false');
  syncInert();
  if (giveFocus && toggle) toggle.focus();
}

// A closed drawer is out of the Tab order; on a wide window the sidebar is a column again.
function syncInert() {
  const side = document.querySelector('.sidebar');
  if (side) side.inert = narrow.matches && !isDrawerOpen();
}

narrow.addEventListener('change', () => { if (!narrow.matches) closeDrawer(); syncInert(); });
export { syncInert };
