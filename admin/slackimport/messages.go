package slackimport

import (
	"archive/zip"
	"context"
	"path"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/natterchat/natter/persist"
)

// knownSubtypes are the message subtypes whose text says all there is (joins, topic and name
// changes, bots, file shares …): imported as their text, with Slack's markup rewritten. Any
// other subtype is imported too, with a note naming it.
var knownSubtypes = map[string]bool{"": true, "bot_message": true, "me_message": true, "thread_broadcast": true,
	"file_share": true, "channel_join": true, "channel_leave": true, "group_join": true, "group_leave": true,
	"channel_topic": true, "channel_purpose": true, "channel_name": true, "group_topic": true, "group_purpose": true,
	"group_name": true, "channel_archive": true, "channel_unarchive": true, "group_archive": true,
	"group_unarchive": true, "pinned_item": true, "unpinned_item": true, "tombstone": true, "bot_add": true,
	"bot_remove": true, "reminder_add": true, "slackbot_response": true, "reply_broadcast": true}

// editRecords are subtypes that record a change to another message, not a message: the export
// already carries the changed message as it ended.
var editRecords = map[string]bool{"message_changed": true, "message_deleted": true, "message_replied": true}

// dayMessage is a message of a day file with its time and its name in the report.
type dayMessage struct {
	message
	at   time.Time
	what string
}

// importMessages imports each listed conversation's days, then reports the folders no list
// names.
func (im *importer) importMessages(ctx context.Context) error {
	for _, id := range im.order {
		if err := im.importPlace(ctx, im.channels[id]); err != nil {
			return err
		}
	}
	read := map[string]bool{}
	for _, id := range im.order {
		read[im.channels[id].folder] = true
	}
	for _, folder := range sortedKeys(im.archive.days) {
		days := strconv.Itoa(len(im.archive.days[folder]))
		switch label, listed := im.folders[folder]; {
		case !listed:
			im.rep.skip("folder "+folder, "no conversation of channels.json, groups.json, dms.json or mpims.json has it; its "+
				days+" day files were not read")
		case !read[folder]:
			im.rep.skip("messages of "+label, "the conversation was skipped; its "+days+" day files were not read")
		}
	}
	return nil
}

// importPlace imports a conversation's days in date order, then marks it read for its members.
func (im *importer) importPlace(ctx context.Context, p place) error {
	for _, f := range im.archive.days[p.folder] {
		day := strings.TrimSuffix(path.Base(f.Name), ".json")
		im.progress(Progress{Place: p.label, Day: day})
		msgs, err := im.readDay(f, p, day)
		if err != nil {
			im.rep.skip(p.label+" "+day, "the rest of the day file: "+err.Error())
		}
		if err := im.importDay(ctx, p, msgs); err != nil {
			return err
		}
	}
	return im.apply(ctx, []step{{what: "read marks of " + p.label, run: func(ctx context.Context, tx *persist.Tx) (func(), error) {
		return nil, tx.HistoryReadThrough(ctx, im.h, p.at, p.members)
	}}})
}

// readDay reads one day file, in timestamp order; messages without a usable timestamp and edit
// records are reported and left out. A malformed file gives what came before the error.
func (im *importer) readDay(f *zip.File, p place, day string) ([]dayMessage, error) {
	var out []dayMessage
	n := 0
	err := eachEntry(f, func(m message, err error) error {
		n++
		what := p.label + " " + day + " message " + strconv.Itoa(n)
		if m.TS != "" {
			what = p.label + " message " + string(m.TS)
		}
		if err != nil {
			im.rep.skip(what, "unreadable: "+err.Error())
			return nil
		}
		at, err := parseTS(m.TS)
		switch {
		case err != nil:
			im.rep.skip(what, err.Error())
		case editRecords[m.Subtype] || m.Hidden:
			im.rep.skip(what, "a record of a change to another message ("+firstOf(m.Subtype, "hidden")+"), not a message")
		default:
			out = append(out, dayMessage{message: m, at: at, what: what})
		}
		return nil
	})
	sort.SliceStable(out, func(i, j int) bool { return out[i].at.Before(out[j].at) })
	return out, err
}

// authorKey is the Slack id a message's author is known by: its user, else its bot, else the
// shared unknown author.
func authorKey(m message) (key, name string, bot bool) {
	switch {
	case m.User != "":
		if m.UserProfile != nil {
			name = firstOf(m.UserProfile.RealName, m.UserProfile.DisplayName, m.UserProfile.Name)
		}
		return m.User, name, m.Subtype == "bot_message"
	case m.BotID != "":
		if m.BotProfile != nil {
			name = m.BotProfile.Name
		}
		return m.BotID, firstOf(m.Username, name), true
	}
	return unknownAuthor, "", false
}

// importDay writes one day: placeholders for unknown authors and reactors first, the files,
// then the messages in batches.
func (im *importer) importDay(ctx context.Context, p place, msgs []dayMessage) error {
	var steps []step
	pending := map[string]bool{}
	need := func(key, name string, bot bool) {
		if _, ok := im.people[key]; !ok && !pending[key] {
			pending[key] = true
			steps = append(steps, im.placeholderStep(key, name, bot))
		}
	}
	for _, m := range msgs {
		need(authorKey(m.message))
		for _, r := range m.Reactions {
			for _, u := range r.Users {
				need(u, "", false)
			}
		}
	}
	if err := im.batches(ctx, steps); err != nil {
		return err
	}
	steps = steps[:0]
	for _, m := range msgs {
		more, err := im.messageSteps(ctx, p, m)
		if err != nil {
			return err
		}
		steps = append(steps, more...)
	}
	return im.batches(ctx, steps)
}

// messageSteps are a message's steps: the message, then its reactions, pin and attachments,
// each on its own so that one refused leaves the rest. Files are stored here, before the
// message's transaction.
func (im *importer) messageSteps(ctx context.Context, p place, m dayMessage) ([]step, error) {
	key, _, _ := authorKey(m.message)
	src := p.slackID + "/" + string(m.TS)
	var uploads []string
	var notes []string
	for _, f := range m.Files {
		id, ok, err := im.upload(ctx, f, im.people[key].id, m.at)
		switch {
		case ctx.Err() != nil:
			return nil, ctx.Err()
		case err != nil:
			im.rep.skip("file "+f.ID+" of "+m.what, err.Error())
			notes = append(notes, fileNote(f, "could not be stored"))
		case ok:
			uploads = append(uploads, id)
		default:
			notes = append(notes, fileNote(f, ""))
		}
	}
	body, unknown := im.body(m.message, notes, len(uploads))
	steps := []step{{what: m.what, run: func(ctx context.Context, tx *persist.Tx) (func(), error) {
		return im.writeMessage(ctx, tx, p, m, src, body, unknown, len(notes))
	}}}
	if len(m.Reactions) > 0 {
		steps = append(steps, im.reactionsStep(p, m, src))
	}
	if p.at.ChannelID != "" && contains(m.PinnedTo, p.slackID) {
		steps = append(steps, step{what: "pin of " + m.what, run: func(ctx context.Context, tx *persist.Tx) (func(), error) {
			id, ok, err := tx.HistoryLookup(ctx, im.h, persist.HistoryKindMessage, src)
			if err != nil || !ok {
				return nil, err // the message was skipped, and reported
			}
			by, err := im.personID(ctx, tx, key)
			if err != nil {
				return nil, err
			}
			added, err := tx.HistoryPin(ctx, im.h, id, by, m.at)
			return func() { im.rep.add(CountPins, count(added)) }, err
		}})
	}
	for _, up := range uploads {
		steps = append(steps, step{what: "attachment of " + m.what, run: func(ctx context.Context, tx *persist.Tx) (func(), error) {
			id, ok, err := tx.HistoryLookup(ctx, im.h, persist.HistoryKindMessage, src)
			if err != nil || !ok {
				return nil, err
			}
			added, err := tx.HistoryAttach(ctx, im.h, id, up)
			return func() { im.rep.add(CountFilesAttached, count(added)) }, err
		}})
	}
	return steps, nil
}

// writeMessage writes a message or a reply. A reply whose root is not in the export (or was
// skipped) becomes a root, and the thread's later replies follow it.
func (im *importer) writeMessage(ctx context.Context, tx *persist.Tx, p place, m dayMessage, src, body string, unknown bool, notes int) (func(), error) {
	authorKey, _, _ := authorKey(m.message)
	author, err := im.personID(ctx, tx, authorKey)
	if err != nil {
		return nil, err
	}
	var parent string
	orphan := false
	if m.ThreadTS != "" && m.ThreadTS != m.TS {
		root := p.slackID + "/" + string(m.ThreadTS)
		id, ok, err := tx.HistoryLookup(ctx, im.h, persist.HistoryKindMessage, root)
		if err == nil && !ok && im.orphans[root] != "" {
			id, ok, err = tx.HistoryLookup(ctx, im.h, persist.HistoryKindMessage, im.orphans[root])
		}
		if err != nil {
			return nil, err
		}
		if parent, orphan = id, !ok; orphan {
			im.orphans[root] = src // kept if this transaction commits; looked up again if not
		}
	}
	var edited *time.Time
	if m.Edited != nil {
		if t, err := parseTS(m.Edited.TS); err == nil && !t.Before(m.at) {
			edited = &t
		}
	}
	got, err := tx.HistoryMessage(ctx, im.h, persist.HistoryMessageParams{SourceID: src, Place: p.at, AuthorID: author,
		ParentID: parent, Body: body, CreatedAt: m.at, EditedAt: edited})
	if err != nil {
		return nil, err
	}
	return func() {
		switch {
		case !got.Created:
			im.rep.add(CountAlreadyImported, 1)
			return
		case orphan:
			im.rep.add(CountOrphanReplies, 1)
		case parent != "":
			im.rep.add(CountReplies, 1)
		}
		if unknown {
			im.rep.add(CountUnknownSubtypes, 1)
		}
		im.rep.add(CountFilesNoted, notes)
		im.rep.add(CountMessages, 1)
		im.messages++
	}, nil
}

// reactionsStep adds a message's reactions within Natter's limits (the others are reported).
func (im *importer) reactionsStep(p place, m dayMessage, src string) step {
	return step{what: "reactions of " + m.what, run: func(ctx context.Context, tx *persist.Tx) (func(), error) {
		id, ok, err := tx.HistoryLookup(ctx, im.h, persist.HistoryKindMessage, src)
		if err != nil || !ok {
			return nil, err
		}
		var skips []Skip
		added := 0
		emoji, mine := map[string]bool{}, map[string]int{}
		for _, r := range m.Reactions {
			e := emojiOf(r.Name)
			for _, u := range r.Users {
				what := "reaction " + r.Name + " by " + u + " on " + m.what
				if !emoji[e] && len(emoji) >= persist.MaxReactionEmoji || mine[u] >= persist.MaxReactionsPerPerson {
					skips = append(skips, Skip{what, "past Natter's reaction limits for one message"})
					continue
				}
				uid, err := im.personID(ctx, tx, u)
				if err == nil {
					var ok bool
					ok, err = tx.HistoryReaction(ctx, im.h, id, e, uid, m.at)
					added += count(ok)
				}
				if early(err) {
					skips = append(skips, Skip{what, reason(err)})
					continue
				}
				if err != nil {
					return nil, late(err)
				}
				emoji[e], mine[u] = true, mine[u]+1
			}
		}
		return func() {
			im.rep.add(CountReactions, added)
			for _, s := range skips {
				im.rep.skip(s.What, s.Reason)
			}
		}, nil
	}}
}

// body is a message's Natter text: Slack's markup rewritten, /me in italics, an unknown
// subtype named, a line for each file not attached, never empty, cut to Natter's limit.
func (im *importer) body(m message, notes []string, attached int) (string, bool) {
	text := m.Text
	if strings.TrimSpace(text) == "" {
		for _, a := range m.Attachments {
			text = firstOf(text, a.Fallback, a.Text)
		}
	}
	text = strings.TrimSpace(rewrite(text, im))
	if m.Subtype == "me_message" && text != "" {
		text = "_" + text + "_"
	}
	unknown := !knownSubtypes[m.Subtype]
	lines := []string{}
	if text != "" {
		lines = append(lines, text)
	}
	if unknown {
		lines = append(lines, "_(a Slack "+m.Subtype+" message)_")
	}
	lines = append(lines, notes...)
	if len(lines) == 0 && attached > 0 {
		for _, f := range m.Files {
			lines = append(lines, "📎 "+f.displayName())
		}
	}
	if len(lines) == 0 {
		lines = append(lines, "_(an empty Slack message)_")
	}
	body := strings.Join(lines, "\n")
	if utf8.RuneCountInString(body) > persist.MaxBodyLength {
		const cut = "\n_(cut: the Slack message was longer)_"
		body = string([]rune(body)[:persist.MaxBodyLength-utf8.RuneCountInString(cut)]) + cut
	}
	return body, unknown
}

// fileNote is the line that stands for a file whose bytes were not imported.
func fileNote(f file, why string) string {
	switch {
	case why != "":
	case f.Mode == "tombstone":
		why = "deleted in Slack"
	case f.Mode == "hidden_by_limit":
		why = "hidden by Slack's plan limits"
	case f.URLPrivate == "" && f.URLPrivateDownload == "":
		why = "no download address in the export"
	default:
		why = "not downloaded"
	}
	return "📎 " + f.displayName() + " (file not imported: " + why + ")"
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

func count(b bool) int {
	if b {
		return 1
	}
	return 0
}
