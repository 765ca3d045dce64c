package server_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/natterchat/natter/admin/servertest"
	"github.com/natterchat/natter/persist"
)

// standing is what the channel answers of issue 30 say of the caller's place in a channel.
type standing struct {
	ID                string `json:"id"`
	Name              string `json:"name"`
	Joined            *bool  `json:"joined"`
	Starred           *bool  `json:"starred"`
	NotificationLevel string `json:"notification_level"`
	MemberCount       *int   `json:"member_count"`
}

func (w *privateWorld) public(t *testing.T, name string) string {
	t.Helper()
	r := w.createChannel(t, w.owner.Token, map[string]any{"name": name})
	r.RequireStatus(t, http.StatusCreated)
	return w.obj(t, r, "channel")["id"].(string)
}

func (w *privateWorld) standingAt(t *testing.T, r *servertest.Response) standing {
	t.Helper()
	r.RequireStatus(t, http.StatusOK)
	var out struct {
		Channel standing `json:"channel"`
	}
	r.Decode(t, &out)
	require.NotNil(t, out.Channel.Joined, "%s", r.Body)
	require.NotNil(t, out.Channel.MemberCount, "%s", r.Body)
	return out.Channel
}

// listed is the caller's channel list by id.
func (w *privateWorld) listed(t *testing.T, token string) map[string]standing {
	t.Helper()
	r := w.h.Get(t, w.wsPath("/channels"), token)
	r.RequireStatus(t, http.StatusOK)
	var out struct {
		Channels []standing `json:"channels"`
	}
	r.Decode(t, &out)
	m := map[string]standing{}
	for _, c := range out.Channels {
		m[c.ID] = c
	}
	return m
}

func (w *privateWorld) browse(t *testing.T, token string, q url.Values) (names []string, page struct {
	Channels   []standing `json:"channels"`
	NextCursor string     `json:"next_cursor"`
	HasMore    bool       `json:"has_more"`
}) {
	t.Helper()
	r := w.h.Get(t, w.wsPath("/channels/browse?"+q.Encode()), token)
	r.RequireStatus(t, http.StatusOK)
	r.Decode(t, &page)
	for _, c := range page.Channels {
		names = append(names, c.Name)
	}
	return names, page
}

func do(t *testing.T, h *servertest.Harness, method, path, token string) *servertest.Response {
	t.Helper()
	return h.Do(t, servertest.Request{Method: method, Path: path, Token: token})
}

// TestChannelJoinLeave: everyone but guests is in a public channel until they leave it; leaving
// and joining are idempotent, move the member count kept on the channel, and follow the person
// (the channel list says joined); the default channel and a guest's channel cannot be left; a
// channel the caller cannot read cannot be joined, left or starred.
func TestChannelJoinLeave(t *testing.T) {
	t.Parallel()
	w := newPrivateWorld(t)
	random := w.public(t, "random")
	path := func(id, verb string) string { return "/api/channels/" + id + "/" + verb }

	// owner, member, nonMember, memberBot, strangerBot: five; the guest is not counted.
	got := w.standingAt(t, w.h.Post(t, path(random, "join"), w.nonMember.Token, nil))
	require.True(t, *got.Joined)
	require.Equal(t, 5, *got.MemberCount)
	require.Equal(t, "mentions", got.NotificationLevel)

	got = w.standingAt(t, w.h.Post(t, path(random, "leave"), w.nonMember.Token, nil))
	require.False(t, *got.Joined)
	require.Equal(t, 4, *got.MemberCount)
	got = w.standingAt(t, w.h.Post(t, path(random, "leave"), w.nonMember.Token, nil))
	require.Equal(t, 4, *got.MemberCount, "leaving twice changes nothing")
	require.False(t, *w.listed(t, w.nonMember.Token)[random].Joined, "the channel list says so on every device")
	require.True(t, *w.listed(t, w.member.Token)[random].Joined, "nobody else is affected")
	w.h.Get(t, "/api/channels/"+random+"/messages", w.nonMember.Token).RequireStatus(t, http.StatusOK)

	r := w.h.Post(t, path(random, "join"), w.nonMember.Token, nil)
	require.Equal(t, true, r.JSON(t)["joined"])
	got = w.standingAt(t, r)
	require.True(t, *got.Joined)
	require.Equal(t, 5, *got.MemberCount)
	r = w.h.Post(t, path(random, "join"), w.nonMember.Token, nil)
	require.Equal(t, false, r.JSON(t)["joined"], "joining twice changes nothing")
	require.Equal(t, 5, *w.standingAt(t, r).MemberCount)

	// The default channel (#general), the guest's only channel; a private channel's last member may.
	w.h.Post(t, path(w.general["id"].(string), "leave"), w.member.Token, nil).RequireError(t, http.StatusConflict, persist.CodeConflict)
	guestChannel := w.listed(t, w.guest.Token)
	require.Len(t, guestChannel, 1)
	for id := range guestChannel {
		w.h.Post(t, path(id, "leave"), w.guest.Token, nil).RequireError(t, http.StatusConflict, persist.CodeConflict)
	}
	w.h.Post(t, path(random, "join"), w.guest.Token, nil).RequireError(t, http.StatusNotFound, persist.CodeNotFound)
	r = w.createChannel(t, w.nonMember.Token, map[string]any{"name": "solo", "visibility": "private"})
	r.RequireStatus(t, http.StatusCreated)
	solo := w.obj(t, r, "channel")["id"].(string)
	require.Equal(t, 0, *w.standingAt(t, w.h.Post(t, path(solo, "leave"), w.nonMember.Token, nil)).MemberCount,
		"the last member may leave (the moderation view shows it with no members, to archive)")

	// A private channel: those outside find no such channel, whatever they try.
	incidents := w.private["id"].(string)
	for _, verb := range []string{"join", "leave"} {
		w.h.Post(t, path(incidents, verb), w.nonMember.Token, nil).RequireError(t, http.StatusNotFound, persist.CodeNotFound)
	}
	do(t, w.h, http.MethodPut, path(incidents, "star"), w.nonMember.Token).RequireError(t, http.StatusNotFound, persist.CodeNotFound)
	do(t, w.h, http.MethodPut, path(incidents, "star"), w.outsider.Token).RequireError(t, http.StatusNotFound, persist.CodeNotFound)
	w.h.Post(t, path(random, "join"), w.outsider.Token, nil).RequireError(t, http.StatusForbidden, persist.CodeForbidden)
	w.h.Post(t, path("chn_nope", "join"), w.member.Token, nil).RequireError(t, http.StatusNotFound, persist.CodeNotFound)
	// Its member leaves it as DELETE …/members/{me} would: with channel.member_removed.
	r = w.h.Post(t, path(incidents, "leave"), w.member.Token, nil)
	require.Equal(t, "channel.member_removed", w.obj(t, r, "event")["type"])
	require.Equal(t, 1, *w.standingAt(t, r).MemberCount, "the bot is left")
	w.h.Get(t, "/api/channels/"+incidents+"/messages", w.member.Token).RequireError(t, http.StatusNotFound, persist.CodeNotFound)

	// Bots keep their standing: these are a person's own routes.
	w.h.Post(t, path(random, "leave"), w.memberBotTok.Token, nil).RequireStatus(t, http.StatusForbidden)
	w.h.Get(t, "/api/channels/"+random+"/messages", w.memberBotTok.Token).RequireStatus(t, http.StatusOK)
}

// TestChannelStar: a star is the caller's own, twice is once, and the list carries it.
func TestChannelStar(t *testing.T) {
	t.Parallel()
	w := newPrivateWorld(t)
	random := w.public(t, "random")
	star := "/api/channels/" + random + "/star"
	r := do(t, w.h, http.MethodPut, star, w.member.Token)
	r.RequireStatus(t, http.StatusOK)
	first := w.obj(t, r, "star")
	require.Equal(t, true, first["starred"])
	again := w.obj(t, do(t, w.h, http.MethodPut, star, w.member.Token), "star")
	require.Equal(t, first["starred_at"], again["starred_at"], "starring twice keeps the first star")
	require.True(t, *w.listed(t, w.member.Token)[random].Starred)
	require.False(t, *w.listed(t, w.nonMember.Token)[random].Starred)

	require.Equal(t, false, w.obj(t, do(t, w.h, http.MethodDelete, star, w.member.Token), "star")["starred"])
	require.Equal(t, false, w.obj(t, do(t, w.h, http.MethodDelete, star, w.member.Token), "star")["starred"])
	require.False(t, *w.listed(t, w.member.Token)[random].Starred)

	// Leaving a channel takes its star away.
	do(t, w.h, http.MethodPut, star, w.member.Token).RequireStatus(t, http.StatusOK)
	w.h.Post(t, "/api/channels/"+random+"/leave", w.member.Token, nil).RequireStatus(t, http.StatusOK)
	require.False(t, *w.listed(t, w.member.Token)[random].Starred)
	do(t, w.h, http.MethodPut, star, w.memberBotTok.Token).RequireStatus(t, http.StatusForbidden)
}

// TestChannelBrowse: the browser pages the workspace's live channels by name, server-side,
// searches names and display titles, shows private channels only to their members, and counts
// members without reading the history; bad paging is refused.
func TestChannelBrowse(t *testing.T) {
	t.Parallel()
	w := newPrivateWorld(t)
	for _, n := range []string{"alpha", "bravo", "charlie", "delta"} {
		w.public(t, n)
	}
	r := w.createChannel(t, w.owner.Token, map[string]any{"name": "echo", "display_title": "Launch Planning"})
	r.RequireStatus(t, http.StatusCreated)
	old := w.public(t, "foxtrot")
	w.patch(t, "/api/channels/"+old, w.owner.Token, map[string]any{"archived": true}).RequireStatus(t, http.StatusOK)
	w.h.Post(t, "/api/channels/"+w.public(t, "golf")+"/leave", w.member.Token, nil).RequireStatus(t, http.StatusOK)

	var all []string
	cursor := ""
	for pages := 0; ; pages++ {
		require.Less(t, pages, 10)
		names, page := w.browse(t, w.member.Token, url.Values{"limit": {"2"}, "cursor": {cursor}})
		require.LessOrEqual(t, len(names), 2)
		all = append(all, names...)
		if !page.HasMore {
			require.Empty(t, page.NextCursor)
			break
		}
		cursor = page.NextCursor
	}
	require.Equal(t, []string{"alpha", "bravo", "charlie", "delta", "echo", "general", "golf", "incidents"}, all,
		"by name, archived channels aside, the private one its member is in")
	names, _ := w.browse(t, w.nonMember.Token, url.Values{})
	require.NotContains(t, names, "incidents", "a private channel is listed only to its members")

	names, page := w.browse(t, w.member.Token, url.Values{"q": {"#GOL"}})
	require.Equal(t, []string{"golf"}, names)
	require.False(t, *page.Channels[0].Joined)
	require.Equal(t, 4, *page.Channels[0].MemberCount)
	names, _ = w.browse(t, w.member.Token, url.Values{"q": {"planning"}})
	require.Equal(t, []string{"echo"}, names, "the display title is searched too")
	names, _ = w.browse(t, w.member.Token, url.Values{"q": {"%"}})
	require.Empty(t, names, "the text is matched literally")
	_, page = w.browse(t, w.member.Token, url.Values{"q": {"incidents"}})
	require.Equal(t, 2, *page.Channels[0].MemberCount, "a private channel counts its member list")

	for _, bad := range []string{"limit=0", "limit=x", "cursor=zzz", "q=" + strings.Repeat("a", 101)} {
		w.h.Get(t, w.wsPath("/channels/browse?"+bad), w.member.Token).RequireError(t, http.StatusBadRequest, persist.CodeInvalidRequest)
	}
	w.h.Get(t, w.wsPath("/channels/browse"), w.guest.Token).RequireError(t, http.StatusForbidden, persist.CodeForbidden)
	w.h.Get(t, w.wsPath("/channels/browse"), w.outsider.Token).RequireError(t, http.StatusForbidden, persist.CodeForbidden)
	w.h.Get(t, w.wsPath("/channels/browse"), w.memberBotTok.Token).RequireStatus(t, http.StatusOK)
}

// TestChannelMembersPublic: a public channel's members are everyone but guests and those who
// left; anyone in it may bring a leaver back (the empty channel's "invite people"); when a
// leaver leaves the workspace, the count stays right.
func TestChannelMembersPublic(t *testing.T) {
	t.Parallel()
	w := newPrivateWorld(t)
	random := w.public(t, "random")
	members := "/api/channels/" + random + "/members"
	require.ElementsMatch(t, []string{w.owner.User.ID, w.member.User.ID, w.nonMember.User.ID, w.memberBot.ID, w.strangerBot.ID},
		channelMemberIDs(t, w.h.Get(t, members, w.member.Token)))
	w.h.Post(t, "/api/channels/"+random+"/leave", w.nonMember.Token, nil).RequireStatus(t, http.StatusOK)
	require.NotContains(t, channelMemberIDs(t, w.h.Get(t, members, w.member.Token)), w.nonMember.User.ID)

	w.h.Post(t, members, w.member.Token, map[string]any{"user_id": w.nonMember.User.ID}).RequireStatus(t, http.StatusCreated)
	w.h.Post(t, members, w.member.Token, map[string]any{"user_id": w.nonMember.User.ID}).RequireStatus(t, http.StatusOK)
	require.True(t, *w.listed(t, w.nonMember.Token)[random].Joined)
	w.h.Post(t, members, w.member.Token, map[string]any{"user_id": w.guest.User.ID}).RequireError(t, http.StatusBadRequest, persist.CodeInvalidRequest)

	w.h.Post(t, "/api/channels/"+random+"/leave", w.nonMember.Token, nil).RequireStatus(t, http.StatusOK)
	w.h.Do(t, servertest.Request{Method: http.MethodDelete, Token: w.owner.Token,
		Path: w.wsPath("/members/" + w.nonMember.User.ID)}).RequireStatus(t, http.StatusOK)
	require.Equal(t, 4, *w.standingAt(t, w.h.Post(t, "/api/channels/"+random+"/join", w.member.Token, nil)).MemberCount,
		"one person fewer in the workspace, and no one who left")
}
