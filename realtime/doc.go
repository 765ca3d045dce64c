// Package realtime holds everything that consumes the workspace streams, as peers, each
// following them with streams.Follow: this package, the WebSocket layer, and its sub-packages
// delivery (outgoing event subscriptions) and push (Web Push, Pushover).
//
// The WebSocket layer: gobwas/ws upgrades, one epoll instance watching every socket (no
// goroutine and no read buffer per idle connection), a small worker pool for reads, writes,
// catch-up and revalidation, a write queue per socket bounded in bytes (pongs coalesced),
// per-account and per-process socket caps checked before the upgrade, and one ordered follower
// of each workspace's stream per node fanned out to the local sockets, handed over from a
// Postgres backfill by cursor. It imports streams and persist.
package realtime
