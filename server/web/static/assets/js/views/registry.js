// @ts-check
// views/registry.js is where feature modules plug into the shell, so adding a view edits no
// shared file but features.js: side panels by kind, and the entries of the two menus (the
// workspace menu at the top of the sidebar, the personal menu at its bottom).
import { h, replace } from '../dom.js';
import { state } from '../store.js';

const panels = new Map();
const menus = { workspace: [], me: [] };

// registerPanel adds a side panel. spec: { title, render(body, panel, { fresh, topics }),
// topics: store topics (besides 'panel') that redraw it while it is open }. render owns body.
/** @param {string} kind @param {PanelSpec} spec */
export function registerPanel(kind, spec) {
  const had = panels.get(kind);
  if (had && !had.lazy) throw new Error(`panel ${kind} registered twice`);
  panels.set(kind, { topics: [], ...spec });
}

// registerLazyPanel stands in for a panel whose code is fetched the first time it opens: load()
// imports the module, which registers the real panel in the stand-in's place; the panel is then
// drawn as freshly opened. So a first visit does not fetch what only a menu entry opens.
export function registerLazyPanel(kind, title, load) {
  registerPanel(kind, { title, lazy: true, render(body, panel) {
    replace(body, h('p', { class: 'muted pad' }, 'Loading…'));
    load().then(() => {
      const real = panels.get(kind);
      if (!real.lazy && state.panel === panel) real.render(body, panel, { fresh: true, topics: new Set() });
    }, (e) => { replace(body, h('p', { class: 'error pad', role: 'alert' }, e.message)); });
  } });
}

export const panelOf = (kind) => panels.get(kind);

// panelWants says whether the open panel redraws on one of these store topics.
export function panelWants(panel, topics) {
  const spec = panel && panels.get(panel.kind);
  return !!spec && spec.topics.some((t) => topics.has(t));
}

// registerMenuItem adds an entry to 'workspace' or 'me': { label, order, visible?() → bool,
// panel: { kind, … } to open, or run() }. Entries show in ascending order.
export function registerMenuItem(menu, item) {
  menus[menu].push({ order: 50, ...item });
  menus[menu].sort((a, b) => a.order - b.order);
}

export const menuItems = (menu) => menus[menu].filter((i) => !i.visible || i.visible());

// Message rows: registerMessageKind draws the body of messages of one `kind` (the plain
// 'message' kind goes through the Markdown renderer); registerRowPart adds what shows under a
// message: { key(m) → string that changes whenever render's output would, render(m) → Node | null }.
const kinds = new Map();
const rowParts = [];
export function registerMessageKind(kind, render) { kinds.set(kind, render); }
export const kindRenderer = (kind) => kinds.get(kind);
export function registerRowPart(part) { rowParts.push(part); }
export const rowPartsKey = (m) => rowParts.map((p) => p.key(m)).join('|');
export const rowPartsOf = (m) => rowParts.map((p) => p.render(m)).filter(Boolean);
