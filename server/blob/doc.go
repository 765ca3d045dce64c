// Package blob stores upload objects: the bytes of uploaded files, by storage key. It knows
// nothing of workspaces, users or the database (persist keeps the metadata); the server puts an
// object before recording its upload, opens it to stream it back, and deletes it when its
// workspace is deleted. It imports no project package.
//
// Disk keeps objects as files in one directory (the default, under <data-dir>/uploads).
package blob
