// @ts-check
// socket.js owns the workspace's WebSocket and its cursor: it resumes from the last cursor
// after any drop (the server backfills first, so nothing is missed or repeated), reports the
// connection state, and turns the two terminal close codes into decisions.

const RESYNC = 4001; // the cursor is older than the retained log
const REVOKED = 1008; // the session ended

// Socket connects to one workspace; handlers: onEvent(ev), onState(s), onResync(), onRevoked().
export class Socket {
  constructor(workspaceId, cursor, handlers) {
    this.workspaceId = workspaceId;
    this.cursor = cursor || '';
    this.h = handlers;
    this.ws = null;
    this.closed = false;
    this.attempt = 0;
    this.timer = null;
    this.open();
  }

  open() {
    if (this.closed) return;
    const proto = location.protocol === 'https:' ? 'wss:' : 'ws:';
    const qs = new URLSearchParams({ workspace_id: this.workspaceId });
    if (this.cursor) qs.set('after_cursor', this.cursor);
    qs.set('presence', '1'); // the server's presence.changed (lazy/presence.js)
    const ws = new WebSocket(`${proto}//${location.host}/api/realtime/ws?${qs}`);
    this.ws = ws;
    this.h.onState(this.attempt === 0 ? 'connecting' : 'reconnecting');
    ws.onopen = () => {
      this.attempt = 0;
      this.h.onState('open');
    };
    ws.onmessage = (msg) => {
      let ev;
      try { ev = JSON.parse(msg.data); } catch { return; }
      // Ephemeral events carry an empty cursor, which is never stored.
      if (ev.cursor) this.cursor = ev.cursor;
      this.h.onEvent(ev);
    };
    ws.onclose = (e) => {
      console.info('natter socket closed', e.code, e.reason);
      if (this.ws !== ws || this.closed) return;
      this.ws = null;
      if (e.code === REVOKED) { this.closed = true; this.h.onRevoked(); return; }
      if (e.code === RESYNC) { this.closed = true; this.h.onResync(); return; }
      this.retry();
    };
  }

  retry() {
    this.attempt++;
    this.h.onState('reconnecting');
    // 0.25 s, 0.5 s, 1 s, 2 s, then every 4 s, each with some jitter so a restarted server
    // is not met by every client at once.
    const base = Math.min(4000, 250 * 2 ** (this.attempt - 1));
    this.timer = setTimeout(() => this.open(), base * (0.75 + Math.random() * 0.5));
  }

  // kick reconnects now, from the cursor (the network changed under an open socket).
  kick() {
    if (this.closed) return;
    clearTimeout(this.timer);
    const old = this.ws;
    this.ws = null;
    if (old) old.close(1000, 'network changed');
    this.open();
  }

  close() {
    this.closed = true;
    clearTimeout(this.timer);
    if (this.ws) this.ws.close(1000, 'workspace closed');
    this.ws = null;
  }
}
