package slackimport

import (
	"fmt"
	"sort"
	"strings"
)

// Report kinds: what Report.Counts counts.
const (
	CountPeopleCreated   = "people_created"
	CountPeopleMatched   = "people_matched"
	CountBots            = "bots"
	CountDeactivated     = "deactivated_people"
	CountPlaceholders    = "placeholders"
	CountChannels        = "channels"
	CountPrivateChannels = "private_channels"
	CountDirect          = "direct_conversations"
	CountGroupDirect     = "group_conversations"
	CountMessages        = "messages"
	CountReplies         = "replies"
	CountOrphanReplies   = "replies_without_root"
	CountReactions       = "reactions"
	CountPins            = "pins"
	CountFilesAttached   = "files_attached"
	CountFilesNoted      = "files_noted"
	CountUnknownSubtypes = "unknown_subtypes"
	CountAlreadyImported = "already_imported"
	CountSkipped         = "skipped"
)

// Report is the outcome of an import: how many records of each kind were written (see the
// Count constants) and every record skipped, with why.
type Report struct {
	Counts map[string]int `json:"counts"`
	Skips  []Skip         `json:"skips"`
}

// Skip is one record left out: what it was (a file, a conversation, a message by its place and
// timestamp) and why.
type Skip struct {
	What   string `json:"what"`
	Reason string `json:"reason"`
}

// Progress is where an import is, for a terminal's progress line.
type Progress struct {
	Place    string // the conversation being read ("#general", "dm D024BE91L"), or "people"
	Day      string // its day file, when reading messages
	Messages int    // messages written so far in this run
}

func (r *Report) add(kind string, n int) {
	if n != 0 {
		r.Counts[kind] += n
	}
}

func (r *Report) skip(what, reason string) {
	r.Skips = append(r.Skips, Skip{What: what, Reason: reason})
	r.Counts[CountSkipped]++
}

// Summary is the report for people: one line of counts, then a line per skip.
func (r Report) Summary() string {
	kinds := make([]string, 0, len(r.Counts))
	for k := range r.Counts {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	var b strings.Builder
	b.WriteString("imported from Slack:")
	for i, k := range kinds {
		sep := ","
		if i == 0 {
			sep = ""
		}
		fmt.Fprintf(&b, "%s %d %s", sep, r.Counts[k], strings.ReplaceAll(k, "_", " "))
	}
	if len(kinds) == 0 {
		b.WriteString(" nothing")
	}
	for _, s := range r.Skips {
		fmt.Fprintf(&b, "\nskipped %s: %s", s.What, s.Reason)
	}
	return b.String()
}
