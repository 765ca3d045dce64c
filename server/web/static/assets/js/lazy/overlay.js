// @ts-check
// lazy/overlay.js, loaded by the first image clicked: an image opens over the page, as large as
// the window allows, with its name, the original in a new tab, and Close; Esc, a click beside it
// or Close gives the focus back.
import { h, icon } from '../dom.js';

export function openImage(u, url, from) {
  document.querySelector('.overlay')?.remove();
  const close = () => {
    box.remove();
    document.removeEventListener('keydown', onKey, true);
    if (from && from.isConnected) from.focus();
  };
  const onKey = (e) => {
    if (e.key === 'Escape') { e.preventDefault(); e.stopPropagation(); close(); }
    if (e.key === 'Tab') { e.preventDefault(); (document.activeElement === shut ? link : shut).focus(); }
  };
  const name = u.filename || 'image';
  const shut = h('button', { class: 'icon-btn', type: 'button', title: 'Close (Esc)', 'aria-label': 'Close image', onclick: close }, icon('close'));
  const link = h('a', { href: url, target: '_blank', rel: 'noopener' }, 'Open original');
  const box = h('div', { class: 'overlay', role: 'dialog', 'aria-modal': 'true', 'aria-label': name, onclick: (e) => { if (e.target === box) close(); } },
    h('figure', { class: 'overlay-figure' },
      h('img', { class: 'overlay-image', src: url, alt: name }),
      h('figcaption', { class: 'overlay-bar' }, h('span', { class: 'overlay-name' }, name), link, shut)));
  document.body.appendChild(box);
  document.addEventListener('keydown', onKey, true);
  shut.focus();
}
