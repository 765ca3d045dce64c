// Package webpush sends Web Push notifications (RFC 8030, encrypted per RFC 8291, signed with
// the server's VAPID key per RFC 8292) about new messages to the devices people registered:
// the server key pair, subscription validation, the outbound client and its address policy, the
// deliverer (a durable JetStream consumer per workspace, a bounded queue and a worker pool that
// re-checks each push just before sending it) and the hourly dead-device sweep. It imports
// persist and streams; server and admin import it.
package push
