package web_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/natterchat/natter/persist"
)

// bigWorkspace is a workspace seeded at the size of a large team (issue 24 item 6): channels
// named c-0000… (every fourth in a "Projects" section), and people beside its owner.
type bigWorkspace struct {
	id       string
	channels []persist.Channel // in creation order: channels[i] is c-%04d of i
	people   []persist.User
	tag      string // in every person's handle
}

// seedBigWorkspace creates the channels and people straight through persist's write paths, in
// transactions of 500, as admin/benchdata seeds its data mode: the API would take minutes.
// Handles (unique across the server) are a first name, tag and a number: ada1, ben14, adax0.
func seedBigWorkspace(t testing.TB, e *env, owner persist.User, wsID string, channels, people int, tag string) bigWorkspace {
	t.Helper()
	ctx := context.Background()
	w := bigWorkspace{id: wsID, tag: tag}
	actor := persist.ActorFor(owner)
	for from := 0; from < channels; from += 500 {
		err := e.store.WithTx(ctx, func(tx *persist.Tx) error {
			for i := from; i < min(from+500, channels); i++ {
				p := persist.ChannelCreateParams{Name: fmt.Sprintf("c-%04d", i)}
				if i%4 == 3 {
					p.SidebarSection = "Projects"
				}
				c, _, err := tx.ChannelCreate(ctx, actor, wsID, p)
				if err != nil {
					return err
				}
				w.channels = append(w.channels, c)
			}
			return nil
		})
		if err != nil {
			t.Fatalf("seed channels: %v", err)
		}
	}
	names := []string{"Ada", "Ben", "Chloe", "Dev", "Elena", "Farid", "Grace", "Hiro", "Ines", "Jonas", "Kemi", "Lars", "Maya"}
	for from := 0; from < people; from += 500 {
		err := e.store.WithTx(ctx, func(tx *persist.Tx) error {
			for i := from; i < min(from+500, people); i++ {
				u, err := tx.UserCreate(ctx, persist.UserCreateParams{DisplayName: fmt.Sprintf("%s Person %d", names[i%len(names)], i),
					Handle: fmt.Sprintf("%s%s%d", names[i%len(names)], tag, i)})
				if err != nil {
					return err
				}
				if _, err := tx.MemberJoin(ctx, wsID, u.ID, persist.RoleMember); err != nil {
					return err
				}
				w.people = append(w.people, u)
			}
			return nil
		})
		if err != nil {
			t.Fatalf("seed people: %v", err)
		}
	}
	return w
}

// post writes a message into a channel as u, through persist.
func (w bigWorkspace) post(t testing.TB, e *env, u persist.User, channelID, body string) {
	t.Helper()
	err := e.store.WithTx(context.Background(), func(tx *persist.Tx) error {
		_, err := tx.MessageCreate(context.Background(), persist.ActorFor(u), persist.Place{ChannelID: channelID}, persist.MessageCreateParams{Body: body})
		return err
	})
	if err != nil {
		t.Fatalf("post: %v", err)
	}
}
