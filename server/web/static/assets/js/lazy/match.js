// @ts-check
// lazy/match.js ranks the quick switcher's candidates against what is typed, with a cost per
// keystroke that shrinks as the query grows (issue 24: 1,000 channels, conversations and the
// people the directory has answered with). Every candidate's text is lowered once; a query that
// extends the one before is looked for only among the candidates that held that one's letters in
// order (whatever holds "c-001" in order holds "c-00" in order), and only the best few are
// sorted. It imports nothing, so node --test runs it without a browser.

// A letter after one of these starts a word: "#", "@", "_", ".", "-" and white space.
const BREAKS = new Set([' ', '\t', '\n', '#', '@', '_', '.', '-']);

// score says how well query matches text (both already lower-case): its letters must appear in
// order; a match at the start of the text or of a word, and letters next to each other, count
// more, letters skipped between them less. -1 is no match.
export function score(q, t) {
  if (!q) return 0;
  const at = t.indexOf(q);
  if (at === 0) return 1000 - t.length;
  if (at > 0) return (BREAKS.has(t[at - 1]) ? 800 : 600) - t.length;
  let s = 0;
  let from = 0;
  let prev = -2;
  for (const ch of q) {
    const i = t.indexOf(ch, from);
    if (i < 0) return -1;
    s += i === prev + 1 ? 5 : 1;
    if (prev >= 0) s -= (i - prev - 1) / 2;
    if (i === 0 || BREAKS.has(t[i - 1])) s += 3;
    prev = i;
    from = i + 1;
  }
  return s;
}

// holds says whether t has q's letters in order: the test that narrows from one keystroke to
// the next (a score can rise as letters are added, so "scored ≥ 0 before" would lose matches).
export function holds(q, t) {
  let from = 0;
  for (const ch of q) {
    const i = t.indexOf(ch, from);
    if (i < 0) return false;
    from = i + 1;
  }
  return true;
}

// Matcher holds the candidates of one opening of the switcher. Each is { label, extra, rank,
// … }: label is what it is called, extra what else finds it (a display title, handles), rank
// orders equal scores (channels, then conversations, then people), then labels in compare's order.
export class Matcher {
  /** @param {any[]} items @param {(a: string, b: string) => number} compare */
  constructor(items = [], compare = (a, b) => (a < b ? -1 : a > b ? 1 : 0)) {
    this.compare = compare;
    this.all = [];
    this.q = ''; // the query pool was narrowed to
    this.pool = this.all; // the candidates holding q's letters in order
    this.add(items);
  }

  // add takes more candidates (people the directory answered with); those that hold the current
  // query join the pool.
  add(items) {
    for (const item of items) {
      const c = { item, label: item.label.toLowerCase(), extra: (item.extra || '').toLowerCase() };
      this.all.push(c);
      if (this.pool !== this.all && this.holds(this.q, c)) this.pool.push(c);
    }
  }

  holds(q, c) { return holds(q, c.label) || (!!c.extra && holds(q, c.extra)); }

  // find is the best limit candidates for query, best first, each as { item, s }.
  find(query, limit) {
    const q = query.toLowerCase();
    if (!q.startsWith(this.q)) this.pool = this.all;
    if (q !== this.q || this.pool === this.all) {
      const from = this.pool;
      this.pool = q ? from.filter((c) => this.holds(q, c)) : this.all;
      this.q = q;
    }
    const scored = [];
    for (const c of this.pool) {
      const s = Math.max(score(q, c.label), c.extra ? score(q, c.extra) - 1 : -1);
      if (s >= 0) scored.push({ item: c.item, s });
    }
    return top(scored, limit, (a, b) => b.s - a.s || a.item.rank - b.item.rank || this.compare(a.item.label, b.item.label));
  }
}

// top is the first limit of list in cmp's order, without sorting all of it when it is long: a
// first letter matches most of a thousand channels, of which thirty are shown.
function top(list, limit, cmp) {
  if (list.length <= limit * 4) return list.sort(cmp).slice(0, limit);
  const best = list.slice(0, limit).sort(cmp);
  for (let i = limit; i < list.length; i++) {
    const x = list[i];
    if (cmp(x, best[limit - 1]) >= 0) continue;
    let j = limit - 1;
    while (j > 0 && cmp(x, best[j - 1]) < 0) j--;
    best.splice(j, 0, x);
    best.pop();
  }
  return best;
}
