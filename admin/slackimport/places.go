package slackimport

import (
	"context"
	"sort"
	"time"

	"github.com/natterchat/natter/persist"
)

// place is what a Slack conversation became.
type place struct {
	slackID string
	at      persist.Place
	name    string   // the channel's Natter name, for <#C…> links; "" for conversations
	label   string   // how the report and the progress line name it
	folder  string   // its folder of day files in the export
	members []string // Natter ids of the people in it at Slack, for the read marks
}

// listing is one of the export's conversation lists and what its entries become.
type listing struct {
	file    string
	private bool // groups.json: private channels
	direct  bool // dms.json and mpims.json: direct conversations
}

var listings = []listing{{file: "channels.json"}, {file: "groups.json", private: true},
	{file: "dms.json", direct: true}, {file: "mpims.json", direct: true}}

// importPlaces imports the four conversation lists. People a conversation names who are not in
// users.json get a placeholder first. A group conversation with more members than a direct
// conversation holds becomes a private channel.
func (im *importer) importPlaces(ctx context.Context) error {
	for _, l := range listings {
		f := im.archive.lists[l.file]
		if f == nil {
			continue
		}
		var convs []conversation
		err := eachEntry(f, func(c conversation, err error) error {
			switch {
			case err != nil:
				im.rep.skip("a conversation in "+l.file, "unreadable entry: "+err.Error())
			case c.ID == "":
				im.rep.skip("a conversation in "+l.file, "no id")
			default:
				convs = append(convs, c)
			}
			if len(convs) < im.o.BatchSize {
				return nil
			}
			err = im.placesBatch(ctx, l, convs)
			convs = convs[:0]
			return err
		})
		if err != nil {
			return err
		}
		if err := im.placesBatch(ctx, l, convs); err != nil {
			return err
		}
	}
	return nil
}

func (im *importer) placesBatch(ctx context.Context, l listing, convs []conversation) error {
	unknown := map[string]string{}
	for _, c := range convs {
		for _, id := range c.Members {
			if _, ok := im.people[id]; !ok {
				unknown[id] = ""
			}
		}
	}
	im.namesFromMessages(unknown)
	var steps []step
	for id, name := range unknown {
		steps = append(steps, im.placeholderStep(id, name, false))
	}
	if err := im.batches(ctx, steps); err != nil {
		return err
	}
	steps = steps[:0]
	for _, c := range convs {
		steps = append(steps, im.placeStep(l, c))
	}
	return im.apply(ctx, steps)
}

// placeStep imports one conversation of a list.
func (im *importer) placeStep(l listing, c conversation) step {
	var members []string
	for _, id := range c.Members {
		if ref, ok := im.people[id]; ok {
			members = append(members, ref.id)
		}
	}
	var created time.Time
	if c.Created > 0 {
		created = time.Unix(c.Created, 0).UTC()
	}
	p := place{slackID: c.ID, members: members, folder: c.Name, label: "#" + c.Name}
	channel := !l.direct || len(members) > persist.MaxDMMembers
	if l.direct && l.file == "dms.json" {
		p.folder, p.label = c.ID, "direct conversation "+c.ID
	} else if l.direct {
		p.label = "group conversation " + c.Name
	}
	im.folders[p.folder] = p.label
	return step{what: p.label, run: func(ctx context.Context, tx *persist.Tx) (func(), error) {
		var got persist.Imported
		var err error
		if channel {
			got, err = tx.HistoryChannel(ctx, im.h, persist.HistoryChannelParams{SourceID: c.ID, Name: c.Name,
				Title: firstOf(c.Topic.Value, c.Purpose.Value), Private: l.private || l.direct, Archived: c.IsArchived,
				CreatedAt: created, CreatorID: im.people[c.Creator].id, MemberIDs: members})
			p.at = persist.Place{ChannelID: got.ID}
		} else {
			got, err = tx.HistoryConversation(ctx, im.h, persist.HistoryConversationParams{SourceID: c.ID,
				MemberIDs: members, CreatedAt: created})
			p.at = persist.Place{DMID: got.ID}
		}
		if err != nil {
			return nil, err
		}
		if channel {
			ch, err := tx.HistoryChannelGet(ctx, im.h, got.ID)
			if err != nil {
				return nil, late(err)
			}
			p.name = ch.Name // a name taken in Natter may have been numbered
		}
		return func() {
			im.channels[c.ID] = p
			im.order = append(im.order, c.ID)
			kind := CountChannels
			switch {
			case !got.Created && !got.Matched:
				kind = CountAlreadyImported
			case l.file == "dms.json":
				kind = CountDirect
			case l.direct && !channel:
				kind = CountGroupDirect
			case l.private || l.direct:
				kind = CountPrivateChannels
			}
			im.rep.add(kind, 1)
		}, nil
	}}
}

// namesFromMessages names people missing from users.json whom a conversation list names, from
// the profile their messages carry: it reads the day files until every one is named. Exports
// whose users.json is complete never come here.
func (im *importer) namesFromMessages(names map[string]string) {
	left := len(names)
	for _, folder := range sortedKeys(im.archive.days) {
		for _, f := range im.archive.days[folder] {
			if left == 0 {
				return
			}
			_ = eachEntry(f, func(m message, err error) error {
				if name, ok := names[m.User]; ok && name == "" && err == nil && m.UserProfile != nil {
					if names[m.User] = firstOf(m.UserProfile.RealName, m.UserProfile.DisplayName, m.UserProfile.Name); names[m.User] != "" {
						left--
					}
				}
				return nil
			}) // a malformed file is reported when its messages are imported
		}
	}
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
