package server_test

import (
	"net/http"
	"testing"

	"github.com/natterchat/natter/admin/servertest"
	"github.com/natterchat/natter/persist"
	"github.com/natterchat/natter/persist/persisttest"
)

// TestRefusalsAnswerAsDocumented: docs/security.md §What is refused. An unknown id is 404; a
// resource of a workspace the caller is not in is 403 (SPEC §Errors: membership violations);
// what the caller's role hides inside their own workspace is 404, as if absent.
func TestRefusalsAnswerAsDocumented(t *testing.T) {
	t.Parallel()
	h := servertest.New(t)
	c := newChat(t, h)
	m := c.say(t, c.owner, channelMessages(c.general.ID), "hello")
	outsider := h.NewUser(t)
	guest := c.join(t, persist.RoleGuest)
	dm := persisttest.DM(t, h.Store, c.ws.ID, c.owner.User.ID, c.mod.User.ID)

	h.Get(t, channelMessages("chn_01unknownunknownunknownunk"), c.alice.Token).RequireError(t, http.StatusNotFound, persist.CodeNotFound)
	h.Get(t, "/api/messages/msg_01unknownunknownunknownunk", c.alice.Token).RequireError(t, http.StatusNotFound, persist.CodeNotFound)

	h.Get(t, channelMessages(c.general.ID), outsider.Token).RequireError(t, http.StatusForbidden, persist.CodeForbidden)
	h.Get(t, "/api/messages/"+m.ID, outsider.Token).RequireError(t, http.StatusForbidden, persist.CodeForbidden)
	h.Get(t, "/api/workspaces/"+c.ws.ID+"/members", outsider.Token).RequireError(t, http.StatusForbidden, persist.CodeForbidden)

	h.Get(t, channelMessages(c.general.ID), guest.Token).RequireError(t, http.StatusNotFound, persist.CodeNotFound)
	h.Get(t, "/api/dms/"+dm+"/messages", c.alice.Token).RequireError(t, http.StatusNotFound, persist.CodeNotFound)
}
