package streams_test

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/jwt/v2"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nkeys"
	"github.com/stretchr/testify/require"

	"github.com/natterchat/natter/persist/persisttest"
	"github.com/natterchat/natter/streams"
	"github.com/natterchat/natter/streams/streamstest"
)

// TestAuthCalloutAnswersOnlyAServersInbox: an authorization request is answered only on a
// server's own inbox ($SYS._INBOX.…). Anyone else able to publish on the callout subject (it
// verifies as signed by "a server": any server key will do) must not get natter to publish a
// signed answer, or anything, where they choose.
func TestAuthCalloutAnswersOnlyAServersInbox(t *testing.T) {
	t.Parallel()
	emb, nc := streamstest.Embedded(t)
	store := persisttest.NewStore(t)
	owner := persisttest.User(t, store, nil)
	ws := persisttest.Workspace(t, store, owner.ID)
	_, tok := persisttest.Bot(t, store, owner, ws.ID, &persisttest.BotOpts{Scopes: []string{"bot:read"}})
	issuer, err := nkeys.CreateAccount()
	require.NoError(t, err)
	callout, err := streams.NewAuthCallout(streams.AuthCalloutConfig{Store: store, NATS: nc, Issuer: issuer, Account: "NATTER"})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	ran := make(chan error, 1)
	go func() { ran <- callout.Run(ctx) }()
	t.Cleanup(cancel)

	hostile, err := emb.Connect("hostile")
	require.NoError(t, err)
	t.Cleanup(hostile.Close)
	got := make(chan *nats.Msg, 16)
	forged := []string{"natter.events." + ws.ID + ".ws.forged", "$JS.API.STREAM.DELETE." + streams.StreamName(ws.ID), "_INBOX.x.y"}
	for _, s := range forged {
		_, err := hostile.ChanSubscribe(s, got)
		require.NoError(t, err)
	}
	server, err := nkeys.CreateServer()
	require.NoError(t, err)
	serverID, _ := server.PublicKey()
	user, err := nkeys.CreateUser()
	require.NoError(t, err)
	userKey, _ := user.PublicKey()
	req := jwt.NewAuthorizationRequestClaims(userKey)
	req.UserNkey = userKey
	req.Server = jwt.ServerID{Name: "forger", ID: serverID}
	req.ConnectOptions.Token = tok.Token
	signed, err := req.Encode(server)
	require.NoError(t, err)
	for _, reply := range forged {
		require.NoError(t, hostile.PublishRequest(streams.AuthCalloutSubject, reply, []byte(signed)))
	}
	// The same request from a server's inbox is answered: the requests above were well formed.
	inbox := "$SYS._INBOX.forger.1"
	sub, err := hostile.SubscribeSync(inbox)
	require.NoError(t, err)
	require.NoError(t, hostile.PublishRequest(streams.AuthCalloutSubject, inbox, []byte(signed)))
	m, err := sub.NextMsg(10 * time.Second)
	require.NoError(t, err)
	res, err := jwt.DecodeAuthorizationResponseClaims(string(m.Data))
	require.NoError(t, err)
	require.NotEmpty(t, res.Jwt, "a live bot token is admitted: %s", res.Error)

	// Run returns once every request it took is answered, so nothing more can be published.
	cancel()
	require.NoError(t, <-ran)
	require.NoError(t, hostile.Flush())
	select {
	case m := <-got:
		t.Fatalf("natter answered on %q", m.Subject)
	default:
	}
}
