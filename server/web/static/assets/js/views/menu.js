// @ts-check
// views/menu.js is a button with a pop-up menu of the registry's entries (ARIA menu button
// pattern): Enter, Space or ↓ opens it on the first item, ↑/↓ move, Esc closes it and gives the
// focus back to its button, a click outside closes it.
import { h, replace } from '../dom.js';
import * as actions from '../actions.js';
import { menuItems } from './registry.js';

export function menuButton(menu, label, face, extra = []) {
  const list = h('ul', { class: 'menu', role: 'menu', 'aria-label': label, hidden: true });
  const button = h('button', { class: 'icon-btn menu-btn', title: label, 'aria-label': label, 'aria-haspopup': 'menu', 'aria-expanded': 'false',
    onclick: () => (list.hidden ? open(0) : close(false)),
    onkeydown: (e) => { if (e.key === 'ArrowDown') { e.preventDefault(); open(0); } } }, face);
  const items = () => [...list.querySelectorAll('[role=menuitem]')];
  const close = (focusButton) => {
    list.hidden = true;
    button.setAttribute('aria-expanded', 'false');
    document.removeEventListener('pointerdown', outside, true);
    if (focusButton) button.focus();
  };
  const outside = (e) => { if (!wrap.contains(e.target)) close(false); };
  const choose = (item) => {
    close(false);
    // A fresh object each time, so choosing an open panel's entry again reloads it.
    if (item.panel) actions.openPanel({ ...item.panel });
    else Promise.resolve(item.run()).catch((err) => actions.toast(err.message));
  };
  const open = (at) => {
    const entries = menuItems(menu).concat(extra);
    replace(list, ...entries.map((item) => h('li', { role: 'none' },
      h('button', { role: 'menuitem', class: 'menu-item', tabindex: '-1', onclick: () => choose(item) }, item.label))));
    list.hidden = false;
    button.setAttribute('aria-expanded', 'true');
    document.addEventListener('pointerdown', outside, true);
    const all = items();
    if (all.length) all[(at + all.length) % all.length].focus();
  };
  list.addEventListener('keydown', (e) => {
    const all = items();
    const i = all.indexOf(document.activeElement);
    if (e.key === 'ArrowDown' || e.key === 'ArrowUp') { e.preventDefault(); all[(i + (e.key === 'ArrowDown' ? 1 : -1) + all.length) % all.length].focus(); }
    else if (e.key === 'Home' || e.key === 'End') { e.preventDefault(); all[e.key === 'Home' ? 0 : all.length - 1].focus(); }
    else if (e.key === 'Escape' || e.key === 'Tab') { e.stopPropagation(); if (e.key === 'Escape') e.preventDefault(); close(e.key === 'Escape'); }
  });
  const wrap = h('div', { class: 'menu-wrap' }, button, list);
  return wrap;
}
