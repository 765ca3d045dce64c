// Package streams owns Natter's use of NATS: the embedded server or the connection to an external
// cluster, stream provisioning, the outbox relay from Postgres into one JetStream stream per
// workspace, durable-consumer helpers, and NATS authentication for bots. It imports persist.
package streams
