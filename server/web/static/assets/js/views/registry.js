// views/registry.js is where feature modules plug into the shell, so adding a view edits no
// shared file but features.js: side panels by kind, and the entries of the two menus (the
// workspace menu at the top of the sidebar, the personal menu at its bottom).
const panels = new Map();
const menus = { workspace: [], me: [] };

// registerPanel adds a side panel. spec: { title, render(body, panel, { fresh, topics }),
// topics: store topics (besides 'panel') that redraw it while it is open }. render owns body.
export function registerPanel(kind, spec) {
  if (panels.has(kind)) throw new Error(`panel ${kind} registered twice`);
  panels.set(kind, { topics: [], ...spec });
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
