package benchdata

import (
	"context"
	"fmt"
	"math/rand/v2"

	"github.com/natterchat/natter/persist"
)

// personaDMs is how many direct conversations each persona has.
const personaDMs = 20

// people are the users shared by every seeded workspace; the first two are the personas.
type people struct {
	users []persist.User
}

func (p people) nothing() persist.User    { return p.users[0] } // reads nothing
func (p people) everything() persist.User { return p.users[1] } // reads everything
func (p people) owner() persist.User      { return p.users[2] }

// world is one seeded workspace and what the reads need to know of it.
type world struct {
	ws       persist.Workspace
	channels []persist.Channel
	dms      []dmOf
	busiest  persist.Channel   // the channel with most messages
	thread   string            // the root with most replies
	personaD map[string]string // each persona's busiest direct conversation
}

type dmOf struct {
	id      string
	members []persist.User
}

// seedPeople creates n users in transactions of 500.
func seedPeople(ctx context.Context, s *persist.Store, n int, tag string) (people, error) {
	var p people
	for from := 0; from < n; from += 500 {
		err := s.WithTx(ctx, func(tx *persist.Tx) error {
			for i := from; i < min(from+500, n); i++ {
				u, err := tx.UserCreate(ctx, persist.UserCreateParams{DisplayName: fmt.Sprintf("%s %s %d", firstNames[i%len(firstNames)], tag, i),
					Handle: fmt.Sprintf("%s%d", tag, i)})
				if err != nil {
					return err
				}
				p.users = append(p.users, u)
			}
			return nil
		})
		if err != nil {
			return p, fmt.Errorf("seed people: %w", err)
		}
	}
	return p, nil
}

var firstNames = []string{"Ada", "Ben", "Chloe", "Dev", "Elena", "Farid", "Grace", "Hiro", "Ines", "Jonas", "Kemi", "Lars",
	"Maya", "Nils", "Olga", "Priya", "Quinn", "Rosa", "Sami", "Tara", "Uma", "Victor", "Wen", "Xavi", "Yara", "Zoe"}

// seedWorkspace creates a workspace with every person as a member, its channels and direct
// conversations, through persist's own write paths, as the API writes them.
func seedWorkspace(ctx context.Context, s *persist.Store, p people, name string, channels int, seed uint64) (*world, error) {
	w := &world{}
	owner := persist.ActorFor(p.owner())
	err := s.WithTx(ctx, func(tx *persist.Tx) (err error) {
		w.ws, err = tx.WorkspaceCreate(ctx, p.owner().ID, name, "")
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("seed workspace: %w", err)
	}
	for from := 0; from < len(p.users); from += 500 {
		err := s.WithTx(ctx, func(tx *persist.Tx) error {
			for i := from; i < min(from+500, len(p.users)); i++ {
				if i == 2 {
					continue // the owner
				}
				role := persist.RoleMember
				if i%50 == 49 {
					role = persist.RoleModerator
				}
				if _, err := tx.MemberJoin(ctx, w.ws.ID, p.users[i].ID, role); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("seed members: %w", err)
		}
	}
	for from := 0; from < channels; from += 100 {
		err := s.WithTx(ctx, func(tx *persist.Tx) error {
			for i := from; i < min(from+100, channels); i++ {
				c, _, err := tx.ChannelCreate(ctx, owner, w.ws.ID, persist.ChannelCreateParams{Name: fmt.Sprintf("%s-%04d", vocabulary[i%len(vocabulary)], i)})
				if err != nil {
					return err
				}
				w.channels = append(w.channels, c)
			}
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("seed channels: %w", err)
		}
	}
	r := rand.New(rand.NewPCG(seed, 1))
	pairs := make([][]persist.User, 0, channels+2*personaDMs)
	for _, persona := range []persist.User{p.nothing(), p.everything()} {
		for range personaDMs {
			pairs = append(pairs, []persist.User{persona, p.users[3+r.IntN(len(p.users)-3)]})
		}
	}
	for range channels {
		a, b := 3+r.IntN(len(p.users)-3), 3+r.IntN(len(p.users)-3)
		if a != b {
			pairs = append(pairs, []persist.User{p.users[a], p.users[b]})
		}
	}
	err = s.WithTx(ctx, func(tx *persist.Tx) error {
		for _, pair := range pairs {
			d, created, err := tx.DMCreate(ctx, persist.ActorFor(pair[0]), w.ws.ID, []string{pair[1].ID})
			if err != nil {
				return err
			}
			if !created {
				continue // a pair drawn twice has one conversation
			}
			w.dms = append(w.dms, dmOf{id: d.ID, members: pair})
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("seed direct conversations: %w", err)
	}
	return w, nil
}

// findBusiest reads back the busiest channel and the persona's busiest conversation, through
// the listings the reads use.
func (w *world) findBusiest(ctx context.Context, s *persist.Store, p people) error {
	return s.WithTx(ctx, func(tx *persist.Tx) error {
		chans, err := tx.ChannelList(ctx, persist.ActorFor(p.owner()), w.ws.ID)
		if err != nil {
			return err
		}
		for _, c := range chans {
			if c.LastSeq > w.busiest.LastSeq {
				w.busiest = c
			}
		}
		w.personaD = map[string]string{}
		for _, u := range []persist.User{p.nothing(), p.everything()} {
			dms, err := tx.DMList(ctx, persist.ActorFor(u), w.ws.ID)
			if err != nil {
				return err
			}
			var most int64 = -1
			for _, d := range dms {
				if d.LastSeq > most {
					w.personaD[u.ID], most = d.ID, d.LastSeq
				}
			}
		}
		return nil
	})
}

// readEverything moves the "everything" persona's receipts to the end of every channel and
// direct conversation, as the client does when they are read.
func (w *world) readEverything(ctx context.Context, s *persist.Store, p people) error {
	actor := persist.ActorFor(p.everything())
	return s.WithTx(ctx, func(tx *persist.Tx) error {
		chans, err := tx.ChannelList(ctx, actor, w.ws.ID)
		if err != nil {
			return err
		}
		for _, c := range chans {
			if _, err := tx.ReadMark(ctx, actor, persist.Place{ChannelID: c.ID}, c.LastSeq); err != nil {
				return err
			}
		}
		dms, err := tx.DMList(ctx, actor, w.ws.ID)
		if err != nil {
			return err
		}
		for _, d := range dms {
			if _, err := tx.ReadMark(ctx, actor, persist.Place{DMID: d.ID}, d.LastSeq); err != nil {
				return err
			}
		}
		return nil
	})
}
