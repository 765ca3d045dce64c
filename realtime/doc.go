// Package realtime is the WebSocket layer: gobwas/ws upgrades, one epoll instance watching every
// socket (no goroutine and no read buffer per idle connection), a small worker pool for reads,
// writes, catch-up and revalidation, a bounded write queue per socket, and one ordered stream
// consumer per workspace per node fanned out to the local sockets, handed over from a Postgres
// backfill by cursor. It imports streams and persist.
package realtime
