// Package bench is `natter bench`: a load generator for a Natter server on this machine
// (WebSocket fan-out and posting), its bare gobwas/ws baseline server, and the JSON client of
// the API that `natter watch` shares. It talks to the server only over HTTP and WebSocket, as
// any client would, and imports nothing of the project but persist/pglocal: the tenants mode
// (tenants.go) runs a server of its own, on a private PostgreSQL that outlives its restart.
package bench
