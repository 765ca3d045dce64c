// Package outbound is every HTTP call Natter makes to a destination someone else chose or
// configured: slash-command and event-subscription callbacks, Web Push services, the S3 upload
// store, OIDC and GitHub sign-in, the identity proxy's keys.
//
// It holds the one address policy (PublicOnly: private, loopback, link-local, reserved and
// mixed answers are refused, and the address dialled is the one checked), the one constructor
// of their clients (NewClient, NewTransport: no environment proxy, no redirect followed, time
// and header size bounded), and the signed JSON callbacks of integrations (CallbackClient,
// Sign, Verify), whose response bodies are bounded too. It imports no project package, so
// server and realtime both use it without depending on each other.
package outbound
