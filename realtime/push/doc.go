// Package push sends notifications about new messages — Web Push (RFC 8030, encrypted per RFC
// 8291, signed with the server's VAPID key per RFC 8292) to the devices people registered, and
// Pushover — as one of realtime's consumers of the workspace streams: the server key pair,
// subscription validation, the outbound client and its address policy, the deliverer (a durable
// follower per workspace stream, streams.Follow, with workspaces learnt from streams.Discover; a
// bounded queue and a worker pool that re-checks each push just before sending it) and the
// hourly dead-device sweep. It imports persist, streams and outbound; server
// (registration routes) and admin import it.
package push
