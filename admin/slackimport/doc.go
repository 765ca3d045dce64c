// Package slackimport reads a Slack export (the zip Slack's export tool writes) and writes its
// history into a Natter workspace through persist's imported-history writer (persist.History):
// people, public and private channels, direct and group conversations, messages with their
// threads, edits, reactions, pins and files. The archive is read entry by entry and each day's
// file on its own, so memory follows the largest day, not the export. A bad record is reported
// and skipped, and a run repeated imports nothing twice (every record is keyed by its Slack id).
// It belongs to admin (the command `natter admin import slack`) and imports persist and
// server/blob.
package slackimport
