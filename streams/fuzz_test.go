package streams

import (
	"strings"
	"testing"

	"github.com/natterchat/natter/persist"
)

// Fuzz targets for what bots send and what the streams carry. .ci/run runs each for a few
// seconds; a crash found is committed under testdata/fuzz/<Target> as a seed.

// FuzzParseSubject: a subject accepted names exactly the event it would be built from, so the
// visibility read off a subject is the event's.
func FuzzParseSubject(f *testing.F) {
	for _, s := range []string{"natter.events.wsp_1.ws.channel.created", "natter.events.wsp_1.ch.chn_1.message.created",
		"natter.ephemeral.wsp_1.dm.dmc_1.typing.started", "natter.events..ws.x",
		"natter.events.wsp_1.zz.x.y", "natter.revoked", "natter.events.wsp_1.dm.dmc_1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, subject string) {
		ws, scope, typ, ok := ParseSubject(subject)
		if !ok {
			return
		}
		e := persist.Event{WorkspaceID: ws, ChannelID: scope.ChannelID, DirectConversationID: scope.DirectConversationID, Type: typ}
		built := EventSubject(e)
		if strings.HasPrefix(subject, ephemeralRoot) {
			built = EphemeralSubject(e)
		}
		if built != subject {
			t.Fatalf("%q parses as %+v, which is the subject %q", subject, e, built)
		}
	})
}

// FuzzReplayRequest: a bot's replay request is within its limits or refused with a 4xx.
func FuzzReplayRequest(f *testing.F) {
	for _, s := range []string{"", `{}`, `{"after_cursor": "12", "limit": 50, "include_tail": true}`, `{"limit": 501}`,
		`{"after_cursor": "-1"}`, `{"after_cursor": 5}`, `[]`, `{"limit": 1e9}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		req, after, err := parseReplayRequest(data)
		if err != nil {
			if e, ok := persist.ErrorOf(err); !ok || e.Status < 400 || e.Status >= 500 {
				t.Fatalf("%q: want a 4xx application error, got %v", data, err)
			}
			return
		}
		if req.Limit < 1 || req.Limit > 500 || after < 0 {
			t.Fatalf("%q: out of bounds: limit %d, after %d", data, req.Limit, after)
		}
	})
}
