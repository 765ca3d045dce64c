// Package delivery sends the durable events of each active event subscription to its callback,
// as one of realtime's consumers of the workspace streams: one durable follower per subscription
// (streams.Follow) on its workspace's stream (the stream sequence is the cursor), the visibility
// rule applied as the subscription's bot would see the log, the body {subscription_id, event}
// signed through outbound's callback client. Failed deliveries are not retried; every attempt is
// stored. It imports persist, streams and outbound.
package delivery
