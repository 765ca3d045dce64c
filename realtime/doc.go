// Package realtime is the WebSocket layer: gobwas/ws upgrades, one epoll instance watching every
// socket (no goroutine and no read buffer per idle connection), a small worker pool for reads,
// writes, catch-up and revalidation, a write queue per socket bounded in bytes (pongs coalesced),
// per-account and per-process socket caps checked before the upgrade, and one ordered stream
// consumer per workspace per node fanned out to the local sockets, handed over from a Postgres
// backfill by cursor. It imports streams and persist.
package realtime
