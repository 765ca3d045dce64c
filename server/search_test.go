package server_test

import (
	"net/http"
	"net/url"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/natterchat/natter/admin/servertest"
	"github.com/natterchat/natter/persist"
	"github.com/natterchat/natter/persist/persisttest"
)

func (c *chat) search(t *testing.T, who servertest.Actor, params url.Values) *servertest.Response {
	t.Helper()
	if !params.Has("workspace_id") {
		params.Set("workspace_id", c.ws.ID)
	}
	return c.h.Get(t, "/api/search?"+params.Encode(), who.Token)
}

func (c *chat) found(t *testing.T, who servertest.Actor, params url.Values) persist.SearchPage {
	t.Helper()
	r := c.search(t, who, params)
	r.RequireStatus(t, http.StatusOK)
	var p persist.SearchPage
	r.Decode(t, &p)
	return p
}

func resultIDs(p persist.SearchPage) []string {
	ids := []string{}
	for _, r := range p.Results {
		ids = append(ids, r.ID)
	}
	return ids
}

func TestSearch(t *testing.T) {
	t.Parallel()
	h := servertest.New(t)

	t.Run("FindsWhatTheCallerMayRead", func(t *testing.T) {
		t.Parallel()
		c := newChat(t, h)
		inGeneral := c.say(t, c.owner, channelMessages(c.general.ID), "We are deploying the release today")
		inOther := c.say(t, c.alice, channelMessages(c.channel(t, "ops").ID), "the deployment failed")
		reply := c.reply(t, c.mod, inGeneral.ID, "deploy went fine")
		inGuest := c.say(t, c.owner, channelMessages(c.guestRoom.ID), "welcome, we deploy on fridays")
		_, aliceDM := c.openDM(t, c.alice, c.mod.User.ID)
		private := c.say(t, c.alice, dmMessages(aliceDM.ID), "deploy secrets")
		ownerDM := persisttest.DM(t, h.Store, c.ws.ID, c.owner.User.ID, c.mod.User.ID)
		c.say(t, c.owner, dmMessages(ownerDM), "other deploy secrets")
		gone := c.say(t, c.alice, channelMessages(c.general.ID), "deploy typo")
		c.del(t, c.alice, "/api/messages/"+gone.ID).RequireStatus(t, http.StatusOK)
		c.say(t, c.alice, channelMessages(c.general.ID), "unrelated chatter")

		q := url.Values{"q": {"deploy"}}
		require.ElementsMatch(t, []string{inGeneral.ID, inOther.ID, reply.ID, inGuest.ID, private.ID}, resultIDs(c.found(t, c.alice, q)),
			"stemmed matches in every channel and the caller's DMs, replies included; no other DMs, no deleted messages")
		guest := c.join(t, persist.RoleGuest)
		require.Equal(t, []string{inGuest.ID}, resultIDs(c.found(t, guest, q)), "guests search only the guest channel")
		require.ElementsMatch(t, []string{inGeneral.ID, reply.ID}, resultIDs(c.found(t, c.alice, url.Values{"q": {"deploy"}, "channel_id": {c.general.ID}})))
		require.Equal(t, []string{private.ID}, resultIDs(c.found(t, c.alice, url.Values{"q": {"deploy"}, "direct_conversation_id": {aliceDM.ID}})))
		c.search(t, c.alice, url.Values{"q": {"deploy"}, "direct_conversation_id": {ownerDM}}).RequireError(t, http.StatusNotFound, persist.CodeNotFound)
		c.search(t, guest, url.Values{"q": {"deploy"}, "channel_id": {c.general.ID}}).RequireError(t, http.StatusNotFound, persist.CodeNotFound)
		c.search(t, h.NewUser(t), q).RequireError(t, http.StatusForbidden, persist.CodeForbidden)

		res := c.found(t, c.alice, url.Values{"q": {"release"}}).Results
		require.Len(t, res, 1)
		require.Equal(t, c.general.ID, res[0].ChannelID)
		require.Equal(t, inGeneral.ID, res[0].ThreadRootID)
		require.Equal(t, c.owner.User.ID, res[0].AuthorID)
		require.Equal(t, c.owner.User.DisplayName, res[0].Author.DisplayName)
		require.Equal(t, []string{reply.ID}, resultIDs(c.found(t, c.alice, url.Values{"q": {`"went fine"`}})), "phrases")
		require.Equal(t, []string{inOther.ID}, resultIDs(c.found(t, c.alice, url.Values{"q": {"deploy -release -fine -secrets -fridays"}})), "exclusions")
		require.Empty(t, c.found(t, c.alice, url.Values{"q": {"the"}}).Results, "stop words alone match nothing")
	})

	t.Run("SnippetHighlightsAreCodePointRanges", func(t *testing.T) {
		t.Parallel()
		c := newChat(t, h)
		c.say(t, c.alice, channelMessages(c.general.ID), "🚀 naïve rockets launch; 🚀 launching again")
		res := c.found(t, c.alice, url.Values{"q": {"launch"}}).Results
		require.Len(t, res, 1)
		snippet := []rune(res[0].Snippet)
		require.NotEmpty(t, res[0].Highlights)
		var words []string
		for _, hl := range res[0].Highlights {
			words = append(words, string(snippet[hl.Start:hl.End]))
		}
		require.Equal(t, []string{"launch", "launching"}, words)
		require.Equal(t, "🚀 naïve rockets launch; 🚀 launching again", res[0].Snippet)

		c.say(t, c.alice, channelMessages(c.general.ID), "markers \ue000 cannot \ue001 confuse the highlighter")
		res = c.found(t, c.alice, url.Values{"q": {"highlighter"}}).Results
		require.Len(t, res, 1)
		hl := res[0].Highlights
		require.Len(t, hl, 1)
		require.Equal(t, "highlighter", string([]rune(res[0].Snippet)[hl[0].Start:hl[0].End]))
	})

	t.Run("PagesWithCursorsBoundToCallerAndQuery", func(t *testing.T) {
		t.Parallel()
		c := newChat(t, h)
		var want []string
		for _, body := range []string{"cursor one", "cursor cursor two", "cursor three", "cursor cursor cursor four", "cursor five"} {
			want = append(want, c.say(t, c.alice, channelMessages(c.general.ID), body).ID)
		}
		for _, sort := range []string{"relevance", "newest"} {
			var got []string
			params := url.Values{"q": {"cursor"}, "limit": {"2"}, "sort": {sort}}
			pages := 0
			for {
				p := c.found(t, c.alice, params)
				pages++
				got = append(got, resultIDs(p)...)
				if p.NextCursor == nil {
					break
				}
				params.Set("cursor", *p.NextCursor)
			}
			require.Equal(t, 3, pages, sort)
			require.ElementsMatch(t, want, got, "every result exactly once (%s)", sort)
			if sort == "newest" {
				require.Equal(t, reversed(want), got)
			}
		}
		first := c.found(t, c.alice, url.Values{"q": {"cursor"}, "limit": {"2"}})
		require.Equal(t, want[3], first.Results[0].ID, "most relevant first")
		next := *first.NextCursor
		c.search(t, c.alice, url.Values{"q": {"other"}, "limit": {"2"}, "cursor": {next}}).RequireError(t, http.StatusBadRequest, persist.CodeInvalidRequest)
		c.search(t, c.alice, url.Values{"q": {"cursor"}, "limit": {"2"}, "sort": {"newest"}, "cursor": {next}}).RequireError(t, http.StatusBadRequest, persist.CodeInvalidRequest)
		c.search(t, c.mod, url.Values{"q": {"cursor"}, "limit": {"2"}, "cursor": {next}}).RequireError(t, http.StatusBadRequest, persist.CodeInvalidRequest)
		c.search(t, c.alice, url.Values{"q": {"cursor"}, "cursor": {"garbage!"}}).RequireError(t, http.StatusBadRequest, persist.CodeInvalidRequest)
	})

	t.Run("BadRequests", func(t *testing.T) {
		t.Parallel()
		c := newChat(t, h)
		for _, params := range []url.Values{
			{"q": {""}},
			{"q": {"   "}},
			{"q": {string(make([]rune, persist.MaxSearchQueryLength+1))}},
			{"q": {"x"}, "limit": {"0"}},
			{"q": {"x"}, "limit": {"ten"}},
			{"q": {"x"}, "sort": {"oldest"}},
			{"q": {"x"}, "channel_id": {c.general.ID}, "direct_conversation_id": {"dm_x"}},
			{"q": {"x"}, "workspace_id": {""}},
		} {
			c.search(t, c.alice, params).RequireError(t, http.StatusBadRequest, persist.CodeInvalidRequest)
		}
		c.search(t, c.alice, url.Values{"q": {"x"}, "limit": {"101"}}).RequireStatus(t, http.StatusOK) // above 100 reads as 100
		other := newChat(t, h)
		c.search(t, c.alice, url.Values{"q": {"x"}, "channel_id": {other.general.ID}}).RequireError(t, http.StatusForbidden, persist.CodeForbidden)
	})
}

func reversed(s []string) []string {
	out := slices.Clone(s)
	slices.Reverse(out)
	return out
}
