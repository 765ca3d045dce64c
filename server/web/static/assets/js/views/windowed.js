// @ts-check
// views/windowed.js: a list that draws only the rows near its scroller's viewport, between two
// spacers standing for the rest (the rows are of one height, measured on the first one drawn),
// so a sidebar of 1,000 channels holds a few dozen rows (issue 24). A row that stays in the
// window is kept where it is, never rebuilt or moved, so a focused row or one under the pointer
// survives a scroll; the rows announce their place in the whole (aria-posinset, aria-setsize).
import { h } from '../dom.js';

export const OVERSCAN = 300; // px drawn beyond each edge of the viewport
export const MIN_VIEW = 800; // px of viewport assumed while the scroller has no height yet

export class WindowedList {
  // ul is the list element; make(key, i) builds row i as an <li>; rowH is the height expected
  // until one is measured.
  constructor(ul, keys, make, rowH = 30) {
    this.ul = ul;
    this.keys = keys;
    this.make = make;
    this.rowH = rowH;
    this.measured = false;
    this.nodes = new Map(); // index → <li> drawn
    this.first = -1;
    this.last = -1;
    this.top = h('li', { class: 'spacer', 'aria-hidden': 'true' });
    this.bottom = h('li', { class: 'spacer', 'aria-hidden': 'true' });
    // The whole height from the start: a list drawn again must not shorten its scroller (the
    // browser would clamp the scroll position) before its rows are back.
    this.bottom.style.height = `${keys.length * rowH}px`;
    ul.append(this.top, this.bottom);
  }

  // offset is the list's top in the scroller's content.
  offset(scroller) {
    return this.ul.getBoundingClientRect().top - scroller.getBoundingClientRect().top + scroller.scrollTop;
  }

  // draw fills the window of scroller's viewport. view is what the caller read of the layout
  // before any list wrote to it (one layout for every list): this list's offset, the scroll
  // position and the viewport's height. Nothing changes when the window is the one drawn.
  draw(scroller, view = { at: this.offset(scroller), top: scroller.scrollTop, height: scroller.clientHeight }) {
    const n = this.keys.length;
    const from = view.top - OVERSCAN - view.at;
    const to = view.top + Math.max(view.height, MIN_VIEW) + OVERSCAN - view.at;
    const first = Math.max(0, Math.min(n, Math.floor(from / this.rowH)));
    const last = Math.max(first, Math.min(n, Math.ceil(to / this.rowH)));
    if (first === this.first && last === this.last) return false;
    this.place(first, last);
    this.top.style.height = `${first * this.rowH}px`;
    this.bottom.style.height = `${(n - last) * this.rowH}px`;
    if (!this.measured && last > first) {
      const rowH = this.nodes.get(first).getBoundingClientRect().height; // fractional: offsetHeight would drift
      if (rowH) {
        this.measured = true;
        if (rowH !== this.rowH) { this.rowH = rowH; this.first = -1; this.draw(scroller); return true; }
      }
    }
    return false;
  }

  // place makes rows first…last-1 the ones drawn, keeping those drawn already where they are.
  place(first, last) {
    for (const [i, node] of this.nodes) if (i < first || i >= last) { node.remove(); this.nodes.delete(i); }
    let ref = this.top.nextSibling;
    for (let i = first; i < last; i++) {
      let node = this.nodes.get(i);
      if (!node) {
        node = this.make(this.keys[i], i);
        node.setAttribute('aria-posinset', String(i + 1));
        node.setAttribute('aria-setsize', String(this.keys.length));
        this.nodes.set(i, node);
      }
      if (node === ref) ref = ref.nextSibling;
      else this.ul.insertBefore(node, ref);
    }
    this.first = first;
    this.last = last;
  }

  // reveal scrolls the scroller the least that shows row i whole; the caller draws then (the
  // rows' heights do not depend on which are drawn, so neither does where row i is).
  reveal(scroller, i) {
    if (i < 0 || i >= this.keys.length) return;
    const y = this.offset(scroller) + i * this.rowH;
    const view = scroller.clientHeight;
    if (view && y < scroller.scrollTop) scroller.scrollTop = y;
    else if (view && y + this.rowH > scroller.scrollTop + view) scroller.scrollTop = y + this.rowH - view;
  }
}
