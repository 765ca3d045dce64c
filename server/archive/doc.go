// Package archive is Natter's workspace export format: a zip of JSON Lines files, versioned by
// its manifest, written (Export) as the store's keyset pages are read, inside one read-only
// snapshot, so memory holds a page whatever the workspace's size; and read back (Import) into a
// deployment through the store's history writer (persist.History…, with what a Natter round
// trip needs beyond it in persist/history_natter.go). docs/operations.md documents the format, what
// an operator's and an owner's export hold, and what a round trip keeps. It imports persist and
// the upload store (server/blob); the command line (admin) and the owner's download (server)
// call it.
package archive
