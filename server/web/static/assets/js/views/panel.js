// @ts-check
// views/panel.js is the side panel: one of thread, pins, search results, or a panel a
// feature registered (views/registry.js) at a time; Esc closes it.
import { h, replace, icon, displayName, fmt } from '../dom.js';
import { state } from '../store.js';
import * as actions from '../actions.js';
import { ThreadView } from './thread.js';
import { renderRow } from './row.js';
import { panelOf } from './registry.js';

const titles = { thread: 'Thread', pins: 'Pinned messages', search: 'Search' };

export class Panel {
  constructor() {
    this.title = h('h2', { id: 'panel-title' });
    this.body = h('div', { class: 'panel-body' });
    this.el = h('aside', { class: 'panel', hidden: true, role: 'dialog', 'aria-modal': 'false', 'aria-labelledby': 'panel-title' },
      h('div', { class: 'panel-head' }, this.title,
        h('button', { class: 'icon-btn', title: 'Close (Esc)', 'aria-label': 'Close panel', onclick: () => actions.openPanel(null) }, icon('close'))),
      this.body);
    this.thread = new ThreadView();
    this.shown = null;
  }

  render(topics) {
    const p = state.panel;
    this.el.hidden = !p;
    document.body.classList.toggle('with-panel', !!p);
    if (!p) { this.shown = null; return; }
    const fresh = this.shown !== p;
    this.shown = p;
    const spec = panelOf(p.kind);
    this.title.textContent = spec ? spec.title : titles[p.kind] || '';
    if (spec) {
      // A registered panel redraws only for the topics it named: redrawing a form for any other
      // change would swallow what the person is typing or clicking.
      if (fresh || spec.topics.some((t) => topics.has(t))) spec.render(this.body, p, { fresh, topics });
      return;
    }
    if (p.kind === 'thread') {
      if (fresh) replace(this.body, this.thread.el);
      this.thread.render(p.rootId);
      return;
    }
    if (p.kind === 'pins' && (fresh || topics.has('pins'))) this.pins();
    else if (p.kind === 'search' && fresh) this.search(p.q);
  }

  async pins() {
    const view = state.view;
    if (!view || view.kind !== 'channel') { replace(this.body, h('p', { class: 'muted pad' }, 'Direct messages have no pins.')); return; }
    try {
      const list = await actions.loadPins(view.id);
      replace(this.body, list.length ? h('div', { class: 'stack' }, ...list.map((m) => h('div', { class: 'card', onclick: () => actions.jumpTo(m.id) },
        renderRow(m, { grouped: false, day: false, inThread: true })))) : h('p', { class: 'muted pad' }, 'Nothing is pinned here yet. Pin a message from its actions.'));
    } catch (e) { replace(this.body, h('p', { class: 'error pad' }, e.message)); }
  }

  async search(qtext, cursor, acc = []) {
    const input = h('input', { type: 'search', class: 'search wide', value: qtext, 'aria-label': 'Search messages',
      onkeydown: (e) => { if (e.key === 'Enter' && input.value.trim()) actions.openPanel({ kind: 'search', q: input.value.trim() }); } });
    replace(this.body, input, h('p', { class: 'muted pad' }, 'Searching…'));
    try {
      const res = await actions.search(qtext, cursor);
      const results = acc.concat(res.results || []);
      replace(this.body, input,
        results.length ? h('ul', { class: 'results', role: 'list' }, ...results.map(result)) : h('p', { class: 'muted pad' }, `No messages match “${qtext}”.`),
        res.next_cursor ? h('button', { class: 'btn wide', onclick: () => this.search(qtext, res.next_cursor, results) }, 'More results') : null);
    } catch (e) { replace(this.body, input, h('p', { class: 'error pad' }, e.message)); }
  }
}

// result is one search hit: its snippet with the highlighted ranges (code-point offsets) as marks.
function result(r) {
  const chars = Array.from(r.snippet || '');
  const parts = [];
  let at = 0;
  for (const { start, end } of [...(r.highlights || [])].sort((a, b) => a.start - b.start)) {
    if (start < at || end > chars.length) continue;
    parts.push(chars.slice(at, start).join(''), h('mark', null, chars.slice(start, end).join('')));
    at = end;
  }
  parts.push(chars.slice(at).join(''));
  const where = r.channel_id ? `#${(state.channels.get(r.channel_id) || {}).name || 'channel'}` : 'direct message';
  return h('li', null, h('button', { class: 'result', onclick: () => actions.jumpTo(r.id).catch((e) => actions.toast(e.message)) },
    h('span', { class: 'result-head' }, h('span', { class: 'author' }, displayName(r.author)), h('span', { class: 'muted' }, ` in ${where} · ${fmt.day(new Date(r.created_at))}`)),
    h('span', { class: 'snippet' }, ...parts)));
}
