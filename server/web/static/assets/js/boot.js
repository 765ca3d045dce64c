// @ts-check
// boot.js starts the first view's API calls as soon as it arrives, while the rest of the
// client's modules are still loading: the page runs it as an async module that imports nothing,
// and api.js, main.js and actions.js import the same instance. Who is signed in, their
// workspaces, then the listings and tail cursor of the workspace the page will open; api.get
// takes each answer. Without it a first visit starts them only once every module has loaded.

const early = new Map(); // path → { res: promise of the Response, at: when it was asked }
const asked = new Set(); // paths api.get has asked for: too late to start early

// prefetch starts a GET now, once per path, and only before api.get asks for it: an answer
// started later could be older than what the page already has.
export function prefetch(path) {
  if (asked.has(path) || early.has(path)) return;
  const res = fetch(path, { headers: { Accept: 'application/json' }, credentials: 'same-origin' });
  res.catch(() => {});
  early.set(path, { res, at: Date.now() });
}

// takeEarly hands the response started for path to its first taker; an answer nobody took
// within 10 seconds is too old to use.
export function takeEarly(path) {
  asked.add(path);
  const e = early.get(path);
  early.delete(path);
  return e && Date.now() - e.at < 10000 ? e.res : null;
}

// workspacePaths are the paths of a workspace's first loads.
export const workspacePaths = {
  tail: (wsId) => `/api/realtime/events?${new URLSearchParams({ workspace_id: wsId, include_tail: 'true', limit: '1' })}`,
  channels: (wsId) => `/api/workspaces/${wsId}/channels`,
  dms: (wsId) => `/api/dms?${new URLSearchParams({ workspace_id: wsId })}`,
};

// prefetchWorkspace starts a workspace's first loads. Messages are not prefetched: they must be
// read after the tail cursor is taken.
export function prefetchWorkspace(wsId) {
  for (const p of Object.values(workspacePaths)) prefetch(p(wsId));
}

// pickWorkspace is the workspace a page opens: the one its address names, else the last one
// used, else the first. byRoute says whether the address named it.
export function pickWorkspace(list) {
  const byRoute = list.find((w) => w.route_id === location.pathname.split('/')[1]);
  const ws = byRoute || list.find((w) => w.id === localStorage.getItem('natter.workspace')) || list[0];
  return { ws, byRoute: !!byRoute };
}

// After signing out nothing of a workspace is fetched (the sign-in view shows).
const signedOut = localStorage.getItem('natter.signedOut') === '1';
const last = signedOut ? null : localStorage.getItem('natter.workspace');
prefetch('/api/me');
prefetch('/api/workspaces');
const listed = early.get('/api/workspaces')?.res;
if (last) prefetchWorkspace(last);
// A first visit (or an address naming another workspace) learns which from the list. The
// response is cloned before api.get reads it (this callback was registered first).
if (!signedOut && listed) {
  listed.then((res) => (res.ok ? res.clone().json() : null)).then((body) => {
    const { ws } = pickWorkspace((body && body.workspaces) || []);
    if (ws && ws.id !== last) prefetchWorkspace(ws.id);
  }).catch(() => {});
}
// The first date formatter of a page loads the locale's data (16-36 ms here, more under load),
// and so does the first collation (the sidebar's order of two channels or more, 16-38 ms): now,
// while the network brings the modules, rather than on the way to the first paint.
new Intl.DateTimeFormat(undefined, { hour: 'numeric', minute: '2-digit' }).format(0);
new Intl.Collator().compare('a', 'b');
