// @ts-check
// views/sizedlist.js: a windowed list (views/windowed.js) whose rows may differ in height, as the
// member directory's do when a person's controls are opened. Each drawn row's height is watched
// (ResizeObserver) and kept by its key in a map the caller holds across redraws, so rows drawn
// again take the place they had; rows never drawn count as the height most measured rows have
// (an opened row is the exception: the smallest or the mean would be off for every other row).
// The list should not be a scroll anchor (CSS overflow-anchor: none): its spacers already keep
// what is in view in place, and an anchor inside would move it once more.
import { WindowedList, OVERSCAN, MIN_VIEW } from './windowed.js';

export class SizedList extends WindowedList {
  // sizes: key → px, the caller's; rowH: the height guessed until a row is measured.
  constructor(ul, keys, make, rowH, sizes) {
    super(ul, keys, (key, i) => {
      const node = make(key, i);
      this.keyOf.set(node, key);
      this.watch.observe(node);
      return node;
    }, rowH);
    this.sizes = sizes;
    this.keyOf = new WeakMap(); // <li> → key
    this.watch = new ResizeObserver((entries) => this.resized(entries));
    this.scroller = null;
    this.guess();
    this.bottom.style.height = `${this.heightTo(keys.length)}px`;
  }

  heightOf(i) { return this.sizes.get(this.keys[i]) || this.rowH; }

  // heightTo is the height of rows 0…i-1.
  heightTo(i) {
    let y = 0;
    for (let j = 0; j < i; j++) y += this.heightOf(j);
    return y;
  }

  // draw draws the rows crossing the viewport and OVERSCAN px beyond it (view as in WindowedList).
  draw(scroller, view = { at: this.offset(scroller), top: scroller.scrollTop, height: scroller.clientHeight }) {
    this.scroller = scroller;
    const n = this.keys.length;
    const from = view.top - OVERSCAN - view.at;
    const to = view.top + Math.max(view.height, MIN_VIEW) + OVERSCAN - view.at;
    let y = 0, first = -1, last = n, above = 0, upto = 0;
    for (let i = 0; i < n; i++) {
      const rowH = this.heightOf(i);
      if (first < 0 && y + rowH > from) { first = i; above = y; }
      if (last === n && y >= to) { last = i; upto = y; }
      y += rowH;
    }
    if (first < 0) { first = n; above = y; }
    if (last === n) upto = y;
    if (last < first) { last = first; upto = above; }
    if (first !== this.first || last !== this.last) this.place(first, last);
    this.top.style.height = `${above}px`;
    this.bottom.style.height = `${y - upto}px`;
    return false;
  }

  // resized keeps the heights the watched rows now have and draws again if one changed; a row
  // gone from the page is no longer watched.
  resized(entries) {
    let moved = false;
    for (const e of entries) {
      if (!e.target.isConnected) { this.watch.unobserve(e.target); continue; }
      const key = this.keyOf.get(e.target);
      const px = e.borderBoxSize && e.borderBoxSize[0] ? e.borderBoxSize[0].blockSize : e.target.getBoundingClientRect().height;
      if (key === undefined || !px || this.sizes.get(key) === px) continue;
      this.sizes.set(key, px);
      moved = true;
    }
    if (!moved) return;
    this.guess();
    if (this.scroller && this.ul.isConnected) this.draw(this.scroller);
  }

  guess() {
    const seen = new Map();
    let best = 0;
    for (const px of this.sizes.values()) {
      const n = (seen.get(px) || 0) + 1;
      seen.set(px, n);
      if (n > best) { best = n; this.rowH = px; this.measured = true; }
    }
  }

  // reveal scrolls the scroller the least that shows row i whole.
  reveal(scroller, i) {
    if (i < 0 || i >= this.keys.length) return;
    const y = this.offset(scroller) + this.heightTo(i);
    const rowH = this.heightOf(i);
    const view = scroller.clientHeight;
    if (view && y < scroller.scrollTop) scroller.scrollTop = y;
    else if (view && y + rowH > scroller.scrollTop + view) scroller.scrollTop = y + rowH - view;
  }

  // stop ends the watching (the list is being replaced).
  stop() { this.watch.disconnect(); }
}
