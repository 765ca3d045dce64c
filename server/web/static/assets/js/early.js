// @ts-check
// early.js is the page's one inline script (web.go writes it into the page and its hash into
// the Content-Security-Policy): it runs as soon as the page's head is parsed, before any module
// has arrived, and starts the first view's API reads, one round trip after the other while the
// modules load: who is signed in and their workspaces; the tail cursor and the listings of the
// workspace the page will open; then the first page of messages of the place it will open.
// The modules take each answer through boot.js (api.get asks takeEarly first), so nothing is
// read twice. It is a classic script (no import, no export): what the modules use of it is
// globalThis.natterBoot. Served as a file too, boot.js imports it where no page ran it (node's
// tests).
(() => {
  const PAGE = 100; // the API's default page of root messages

  const early = new Map(); // path → { res: promise of the Response, at: when it was asked }
  const asked = new Set(); // paths api.get has asked for: too late to start early

  // prefetch starts a GET now, once per path, and only before api.get asks for it: an answer
  // started later could be older than what the page already has. With read, it also gives the
  // answer's JSON (null when not ok), read from a clone made before anyone can take it.
  function prefetch(path, read = false) {
    if (asked.has(path) || early.has(path)) return null;
    const res = fetch(path, { headers: { Accept: 'application/json' }, credentials: 'same-origin', priority: 'high' });
    res.catch(() => {});
    early.set(path, { res, at: Date.now() });
    return read ? res.then((r) => (r.ok ? r.clone().json() : null)).catch(() => null) : null;
  }

  // takeEarly hands the response started for path to its first taker; an answer nobody took
  // within 10 seconds is too old to use.
  function takeEarly(path) {
    asked.add(path);
    const e = early.get(path);
    early.delete(path);
    return e && Date.now() - e.at < 10000 ? e.res : null;
  }

  // q builds a query string from the defined values of params.
  function q(params) {
    const u = new URLSearchParams();
    for (const [k, v] of Object.entries(params)) if (v !== undefined && v !== null && v !== '') u.set(k, String(v));
    const s = u.toString();
    return s ? `?${s}` : '';
  }

  // workspacePaths are the paths of a workspace's first loads.
  const workspacePaths = {
    tail: (wsId) => `/api/realtime/events${q({ workspace_id: wsId, include_tail: 'true', limit: '1' })}`,
    channels: (wsId) => `/api/workspaces/${wsId}/channels`,
    dms: (wsId) => `/api/dms${q({ workspace_id: wsId })}`,
  };

  // pickWorkspace is the workspace a page opens: the one its address names, else the last one
  // used, else the first. byRoute says whether the address named it.
  function pickWorkspace(list) {
    const byRoute = list.find((w) => w.route_id === location.pathname.split('/')[1]);
    const ws = byRoute || list.find((w) => w.id === localStorage.getItem('natter.workspace')) || list[0];
    return { ws, byRoute: !!byRoute };
  }

  let collator = null;
  // defaultPlace is the place last open in the workspace, else #general, else the first
  // channel by name (channels left aside). It sorts nothing unless it must: a page's first
  // collation loads the locale's data.
  function defaultPlace(wsId, channels, dms) {
    const saved = localStorage.getItem(`natter.place.${wsId}`);
    const last = channels.get(saved || '');
    if (last && last.joined !== false || saved && dms.has(saved)) return saved;
    const chans = [...channels.values()].filter((c) => !c.archived && c.joined !== false);
    const general = chans.find((c) => c.name === 'general');
    const byName = (a, b) => (collator ||= new Intl.Collator()).compare(a, b);
    return (general || chans.reduce((a, c) => (a && byName(a.name, c.name) <= 0 ? a : c), null) || {}).id;
  }

  // openingPlace is the place a workspace opens at: the one whose route id the address names
  // (route, when the address named the workspace), else defaultPlace. With dms null (the
  // conversations not listed yet) it is undefined when the answer may be a conversation.
  function openingPlace(wsId, route, channels, dms) {
    const find = (places) => route && [...places.values()].find((p) => p.route_id === route);
    const routed = find(channels) || (dms && find(dms));
    if (routed) return routed.id;
    const saved = localStorage.getItem(`natter.place.${wsId}`);
    if (!dms && (route || (saved && !channels.has(saved)))) return undefined;
    return defaultPlace(wsId, channels, dms || new Map());
  }

  const placePath = (view) => (view.kind === 'dm' ? `/api/dms/${view.id}` : `/api/channels/${view.id}`);
  // pagePath is the path of a page of a place's root messages.
  const pagePath = (view, params) => `${placePath(view)}/messages${q({ limit: PAGE, ...params })}`;
  // firstPage is how a place opens: around its first unread message, else at the newest.
  const firstPage = (place) => (place.unread_count > 0 && place.last_read_seq ? { around_seq: place.last_read_seq + 1 } : { mode: 'latest' });

  const byId = (list) => new Map((list || []).map((p) => [p.id, p]));
  const started = new Map(); // workspace id → its listings' answers
  function prefetchWorkspace(wsId) {
    if (!started.has(wsId)) {
      started.set(wsId, {
        tail: prefetch(workspacePaths.tail(wsId), true),
        channels: prefetch(workspacePaths.channels(wsId), true),
        dms: prefetch(workspacePaths.dms(wsId), true),
      });
    }
    return started.get(wsId);
  }

  // prefetchFirstPage starts the messages of the place the workspace opens at, once its tail
  // cursor is taken: the socket opened from that cursor then misses nothing the page lacks.
  async function prefetchFirstPage(wsId, route) {
    const loads = prefetchWorkspace(wsId);
    const [tail, chans] = await Promise.all([loads.tail, loads.channels]);
    if (!tail || !chans) return;
    const channels = byId(chans.channels);
    let id = openingPlace(wsId, route, channels, null);
    let dms = null;
    if (id === undefined) {
      const listed = await loads.dms;
      if (!listed) return;
      dms = byId(listed.conversations);
      id = openingPlace(wsId, route, channels, dms);
    }
    const place = channels.get(id) || (dms && dms.get(id));
    if (place) prefetch(pagePath({ kind: channels.has(id) ? 'channel' : 'dm', id }, firstPage(place)));
  }

  // After signing out nothing of a workspace is read (the sign-in view shows).
  const signedOut = localStorage.getItem('natter.signedOut') === '1';
  prefetch('/api/me');
  const listed = prefetch('/api/workspaces', true);
  const last = signedOut ? null : localStorage.getItem('natter.workspace');
  if (last) prefetchWorkspace(last);
  // The first date formatter of a page loads the locale's data (16-78 ms here), and so does the
  // first collation: once the first page of messages is asked for, while the network brings it
  // (earlier it would hold back the answers the next reads wait for).
  const warm = () => setTimeout(() => {
    new Intl.DateTimeFormat(undefined, { hour: 'numeric', minute: '2-digit' }).format(0);
    new Intl.Collator().compare('a', 'b');
  });
  if (!signedOut && listed) {
    listed.then((body) => {
      const { ws, byRoute } = pickWorkspace((body && body.workspaces) || []);
      if (ws) return prefetchFirstPage(ws.id, byRoute ? location.pathname.split('/')[2] : null);
    }).catch(() => {}).then(warm);
  }

  globalThis.natterBoot = { prefetch, takeEarly, q, workspacePaths, pickWorkspace, openingPlace, defaultPlace, placePath, pagePath, firstPage };
})();
