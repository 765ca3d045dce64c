// Package server is Natter's HTTP API: the chi router and its one route table (routes.go), the
// middleware that identifies the caller and enforces each route's requirement, one file per
// resource, and the JSON error model (error.go is the only writer of error responses). Handlers
// parse, make one persist call, and write; authorization lives in persist, in the transaction of
// the write. Uploaded files live in the sub-package blob, which knows nothing of the rest. It
// imports persist and realtime (the socket layer, and push for device registration); nothing in
// server follows a stream or speaks NATS but the test harness servertest, which starts the whole
// system.
package server
