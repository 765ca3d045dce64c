// @ts-check
// views/shell.js lays out the three columns and routes store changes to the views that show
// them; it also owns the connection banner, the toast and the keyboard shortcuts.
import { h, replace } from '../dom.js';
import { state, subscribe, touch } from '../store.js';
import * as actions from '../actions.js';
import { Sidebar } from './sidebar.js';
import { Header } from './header.js';
import { MessageList } from './list.js';
import { Composer } from './composer.js';
import { Panel } from './panel.js';
import { renderProgress } from './progress.js';
import { typers } from '../live.js';
import { panelWants } from './registry.js';
import { backdrop as drawerBackdrop, closeDrawer, isDrawerOpen, syncInert } from './drawer.js';
import '../features.js';

export function mountShell(root) {
  const sidebar = new Sidebar();
  const header = new Header();
  const list = new MessageList();
  const composer = new Composer();
  const panel = new Panel();
  const banner = h('div', { class: 'banner', role: 'status', 'aria-live': 'polite', hidden: true });
  const typing = h('div', { class: 'typing', 'aria-live': 'polite' });
  const progress = h('div', { class: 'agents', role: 'status', 'aria-label': 'Agents at work', hidden: true });
  const toast = h('div', { class: 'toast', role: 'status', hidden: true });
  const empty = h('div', { class: 'empty', hidden: true });
  const conversation = h('section', { class: 'conversation', 'aria-label': 'Conversation' },
    header.el, banner, empty, list.wrap, progress, typing, composer.el);
  replace(root, h('div', { class: 'shell' }, sidebar.el, drawerBackdrop, conversation, panel.el, toast));
  syncInert();

  let offlineSince = 0;
  subscribe((t) => {
    if (t.has('view') || t.has('panel')) closeDrawer();
    if (t.has('sidebar') || t.has('view') || t.has('conn') || t.has('presence')) sidebar.render();
    if (t.has('header') || t.has('view') || t.has('sidebar') || t.has('panel')) header.render();
    if (t.has('messages') || t.has('view')) list.render();
    if (t.has('view') || t.has('quote') || t.has('channel')) composer.render();
    if (t.has('panel') || t.has('thread') || t.has('pins') || t.has('channel') || (t.has('messages') && state.panel) || panelWants(state.panel, t)) panel.render(t);
    if (t.has('typing') || t.has('view')) renderTyping(typing);
    if (t.has('progress') || t.has('view') || t.has('sidebar') || t.has('messages') || t.has('panel')) renderProgress(progress);
    if (t.has('conn')) {
      if (state.conn === 'open') offlineSince = 0;
      else if (!offlineSince) offlineSince = Date.now();
      renderBanner(banner, offlineSince);
    }
    if (t.has('toast')) { toast.hidden = !state.toast; toast.textContent = state.toast || ''; }
    if (t.has('sidebar') || t.has('view')) {
      empty.hidden = !!state.view;
      empty.textContent = state.workspaces.length ? 'Pick a channel to start.' : 'You are not in a workspace yet. Ask for an invite, then reload.';
    }
  });
  // Typing lines fade after a few seconds without a new event.
  setInterval(() => touch('typing'), 2000);
  // A quiet agent's block expires; the check rides on the same clock.
  setInterval(() => { if (state.progress.size) touch('progress'); }, 2000);
  document.addEventListener('visibilitychange', () => {
    if (document.visibilityState === 'visible' && state.view) actions.markRead(state.view);
  });
  document.addEventListener('keydown', (e) => shortcuts(e, sidebar));
  sidebar.render();
  header.render();
  composer.render();
}

function renderBanner(el, offlineSince) {
  if (state.newVersion) {
    replace(el, 'A new version of Natter is available. ', h('button', { class: 'link', onclick: () => location.reload() }, 'Reload'));
    el.hidden = false;
    return;
  }
  // The browser knows the network is gone before the socket does (a dead socket can look open).
  if (!navigator.onLine) {
    el.textContent = 'You are offline. What you write is sent when the connection returns.';
    el.hidden = false;
    return;
  }
  const down = state.conn === 'reconnecting' || state.conn === 'connecting';
  if (!down) { el.hidden = true; return; }
  // A blip shorter than a second shows nothing; after that, a thin banner.
  const wait = 1000 - (Date.now() - offlineSince);
  if (wait > 0) { setTimeout(() => touch('conn'), wait + 10); el.hidden = true; return; }
  el.textContent = 'Reconnecting…';
  el.hidden = false;
}

function renderTyping(el) {
  const names = state.view ? typers(state.view.id).map((id) => (state.users.get(id) || {}).display_name || 'Someone') : [];
  el.textContent = names.length === 0 ? '' : names.length === 1 ? `${names[0]} is typing…` : `${names.slice(0, 2).join(' and ')} are typing…`;
}

function shortcuts(e, sidebar) {
  if ((e.ctrlKey || e.metaKey) && e.key.toLowerCase() === 'k') {
    e.preventDefault();
    // The quick switcher is loaded when first asked for: a first visit does not wait for it.
    import('../lazy/switcher.js').then((m) => m.openSwitcher()).catch((err) => actions.toast(err.message));
    return;
  }
  if (e.altKey && (e.key === 'ArrowUp' || e.key === 'ArrowDown')) { e.preventDefault(); sidebar.step(e.key === 'ArrowUp' ? -1 : 1, e.shiftKey); return; }
  if (e.key === 'Escape') {
    if (isDrawerOpen()) { closeDrawer(true); return; }
    if (state.panel) { actions.openPanel(null); return; }
    if (state.view) actions.markRead(state.view);
    return;
  }
  const typingInField = /^(INPUT|TEXTAREA|SELECT)$/.test(document.activeElement.tagName);
  if (e.key === '?' && !typingInField) { e.preventDefault(); actions.openPanel({ kind: 'shortcuts' }); }
}
