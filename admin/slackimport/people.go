package slackimport

import (
	"context"
	"fmt"
	"strings"

	"github.com/natterchat/natter/persist"
)

// personRef is what a Slack user or bot became.
type personRef struct {
	id      string
	mention string // how <@U…> reads: "@handle", or "@Display Name" without one
}

// unknownAuthor keys the placeholder of messages with neither a user nor a bot id.
const unknownAuthor = "unknown-author"

// importPeople imports users.json, then the people of org_users.json it did not list. Bots are
// bots; deleted users deactivated authors; the others members, matched by email first.
func (im *importer) importPeople(ctx context.Context) error {
	im.progress(Progress{Place: "people"})
	seen := map[string]bool{}
	for _, name := range []string{"users.json", "org_users.json"} {
		f := im.archive.lists[name]
		if f == nil {
			continue
		}
		var steps []step
		err := eachEntry(f, func(u user, err error) error {
			switch {
			case err != nil:
				im.rep.skip("a person in "+name, "unreadable entry: "+err.Error())
			case u.ID == "":
				im.rep.skip("a person in "+name, "no id")
			case !seen[u.ID]:
				seen[u.ID] = true
				steps = append(steps, im.personStep(u))
			}
			if len(steps) < im.o.BatchSize {
				return nil
			}
			err = im.apply(ctx, steps)
			steps = steps[:0]
			return err
		})
		if err != nil {
			return err
		}
		if err := im.apply(ctx, steps); err != nil {
			return err
		}
	}
	return nil
}

// personStep imports one entry of users.json.
func (im *importer) personStep(u user) step {
	p := persist.HistoryPersonParams{SourceID: u.ID, Handle: u.Name, Email: im.email(u.Profile.Email),
		DisplayName: firstOf(u.RealName, u.Profile.RealName, u.Profile.DisplayName, u.Name, u.ID),
		AvatarURL:   firstOf(u.Profile.Image512, u.Profile.Image192), Deactivated: u.Deleted}
	switch {
	case u.IsBot || u.IsAppUser:
		p.Kind = persist.KindBot
	case u.IsRestricted || u.IsUltraRestricted:
		p.Role = persist.RoleGuest
	case u.IsOwner || u.IsAdmin:
		p.Role = persist.RoleModerator
	}
	return step{what: "person " + u.ID, run: func(ctx context.Context, tx *persist.Tx) (func(), error) {
		got, err := tx.HistoryPerson(ctx, im.h, p)
		if err != nil {
			return nil, err
		}
		ref, err := im.ref(ctx, tx, got.ID)
		return func() {
			im.people[u.ID] = ref
			if u.Profile.BotID != "" {
				im.people[u.Profile.BotID] = ref // bot messages name the bot, not its user
			}
			switch {
			case !got.Created && !got.Matched:
				im.rep.add(CountAlreadyImported, 1)
			case got.Matched:
				im.rep.add(CountPeopleMatched, 1)
			case p.Kind == persist.KindBot:
				im.rep.add(CountBots, 1)
			case p.Deactivated:
				im.rep.add(CountDeactivated, 1)
			default:
				im.rep.add(CountPeopleCreated, 1)
			}
		}, late(err)
	}}
}

// ref reads how a Natter user is mentioned.
func (im *importer) ref(ctx context.Context, tx *persist.Tx, id string) (personRef, error) {
	u, err := tx.UserGet(ctx, id)
	if err != nil {
		return personRef{}, err
	}
	return personRef{id: id, mention: "@" + firstOf(u.Handle, u.FormerHandle, u.DisplayName)}, nil
}

// placeholderStep gives a Slack id seen only in messages (a person missing from users.json, a
// bot, or no author at all) a deactivated identity of the right kind, named as well as the
// message allows, so its messages keep an author who cannot sign in or be mentioned live.
func (im *importer) placeholderStep(slackID, name string, bot bool) step {
	p := persist.HistoryPersonParams{SourceID: slackID, Deactivated: true,
		DisplayName: firstOf(name, "Slack user "+slackID)}
	if bot {
		p.Kind = persist.KindBot
		p.DisplayName = firstOf(name, "Slack bot "+slackID)
	}
	if slackID == unknownAuthor {
		p.DisplayName = "Unknown Slack author"
	}
	p.Handle = p.DisplayName
	return step{what: "placeholder for " + slackID, run: func(ctx context.Context, tx *persist.Tx) (func(), error) {
		got, err := tx.HistoryPerson(ctx, im.h, p)
		if err != nil {
			return nil, err
		}
		ref, err := im.ref(ctx, tx, got.ID)
		return func() {
			im.people[slackID] = ref
			if got.Created {
				im.rep.add(CountPlaceholders, 1)
			} else {
				im.rep.add(CountAlreadyImported, 1)
			}
		}, late(err)
	}}
}

// personID is the Natter user of a Slack id, also when the person was written earlier in the
// running transaction (a placeholder of the same batch). Codes: not_found.
func (im *importer) personID(ctx context.Context, tx *persist.Tx, slackID string) (string, error) {
	if ref, ok := im.people[slackID]; ok {
		return ref.id, nil
	}
	id, ok, err := tx.HistoryLookup(ctx, im.h, persist.HistoryKindPerson, slackID)
	if err == nil && !ok {
		err = persist.NotFound(fmt.Sprintf("Slack person %s", slackID))
	}
	return id, err
}

// email applies --map-emails to an address of the export.
func (im *importer) email(addr string) string {
	addr = strings.ToLower(strings.TrimSpace(addr))
	if to, ok := im.o.EmailMap[addr]; ok {
		return to
	}
	return addr
}

// late marks an error of a record's later write: the batch is redone one record at a time.
func late(err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("%w: %w", errLate, err)
}

// firstOf returns the first of vs that is not blank.
func firstOf(vs ...string) string {
	for _, v := range vs {
		if strings.TrimSpace(v) != "" {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// mention implements namer.
func (im *importer) mention(slackID string) string { return im.people[slackID].mention }

// channelName implements namer.
func (im *importer) channelName(slackID string) string { return im.channels[slackID].name }
