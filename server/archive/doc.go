// Package archive is Natter's workspace export format: a zip of JSON Lines files, versioned by
// its manifest, written (Export) as the store's keyset pages are read, inside one read-only
// snapshot, so memory holds a page whatever the workspace's size. docs/operations.md documents the format, what
// an operator's and an owner's export hold, and what a round trip keeps. It imports persist and
// the upload store (server/blob); the command line (admin) and the owner's download (server)
// call it.
package archive
