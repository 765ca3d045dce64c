// Package streams owns Natter's use of NATS: the embedded server or the connection to an external
// cluster, stream provisioning, the outbox relay from Postgres into one JetStream stream per
// workspace, durable-consumer helpers, and NATS authentication for bots: on the embedded server
// (BotAccess) or, on an external cluster, through its auth callout (AuthCallout). LocalCluster
// runs a real multi-node cluster in-process for `natter cluster` and tests. It imports persist.
package streams
