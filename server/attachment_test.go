package server_test

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/natterchat/natter/admin/servertest"
	"github.com/natterchat/natter/persist"
	"github.com/natterchat/natter/persist/persisttest"
)

func TestMessageCreateWithUpload(t *testing.T) {
	t.Parallel()
	h := servertest.New(t)

	t.Run("LinkedInTheCreateAndCarriedByItsEvent", func(t *testing.T) {
		t.Parallel()
		c := newChat(t, h)
		dm := persisttest.DM(t, h.Store, c.ws.ID, c.alice.User.ID, c.mod.User.ID)
		for _, path := range []string{channelMessages(c.general.ID), dmMessages(dm)} {
			up := uploadText(t, h, c.alice.Token, c.ws.ID, "report.txt", "numbers")
			r := c.post(t, c.alice, path, map[string]any{"body": "see attached", "upload_id": up.ID})
			r.RequireStatus(t, http.StatusCreated)
			m := messageOf(t, r)
			requireOneAttachment(t, m, up)
			ev := eventOf(t, r)
			var payload struct {
				Message persist.Message `json:"message"`
			}
			raw, err := json.Marshal(ev.Payload)
			require.NoError(t, err)
			require.NoError(t, json.Unmarshal(raw, &payload))
			requireOneAttachment(t, payload.Message, up)

			got := h.Get(t, "/api/messages/"+m.ID, c.mod.Token)
			got.RequireStatus(t, http.StatusOK)
			requireOneAttachment(t, messageOf(t, got), up)
		}
	})

	t.Run("HydratedOnEveryRead", func(t *testing.T) {
		t.Parallel()
		c := newChat(t, h)
		a := uploadText(t, h, c.alice.Token, c.ws.ID, "a.txt", "a")
		b := uploadText(t, h, c.alice.Token, c.ws.ID, "b.txt", "b")
		plain := c.say(t, c.alice, channelMessages(c.general.ID), "no file")
		r := c.post(t, c.alice, channelMessages(c.general.ID), map[string]any{"body": "two files", "upload_id": a.ID})
		r.RequireStatus(t, http.StatusCreated)
		withFiles := messageOf(t, r)
		attach(t, h, c.alice, withFiles.ID, b.ID).RequireStatus(t, http.StatusOK)
		c.reply(t, c.mod, withFiles.ID, "thanks")

		page := pageOf(t, h.Get(t, channelMessages(c.general.ID), c.mod.Token))
		require.Len(t, page.Messages, 2)
		require.Equal(t, []persist.Upload{}, page.Messages[0].Attachments, "%s", plain.ID)
		require.Equal(t, []string{a.ID, b.ID}, uploadIDs(page.Messages[1].Attachments), "in the order attached")

		thread := h.Get(t, "/api/messages/"+withFiles.ID+"/thread", c.mod.Token)
		thread.RequireStatus(t, http.StatusOK)
		var th struct {
			Root    persist.Message   `json:"root"`
			Replies []persist.Message `json:"replies"`
		}
		thread.Decode(t, &th)
		require.Equal(t, []string{a.ID, b.ID}, uploadIDs(th.Root.Attachments))
		require.Equal(t, []persist.Upload{}, th.Replies[0].Attachments)

		h.Post(t, "/api/channels/"+c.general.ID+"/pins", c.mod.Token, map[string]any{"message_id": withFiles.ID}).
			RequireStatus(t, http.StatusCreated)
		pins := h.Get(t, "/api/channels/"+c.general.ID+"/pins", c.mod.Token)
		var pl struct {
			Messages []persist.Message `json:"messages"`
		}
		pins.Decode(t, &pl)
		require.Equal(t, []string{a.ID, b.ID}, uploadIDs(pl.Messages[0].Attachments))

		deleted := c.del(t, c.alice, "/api/messages/"+withFiles.ID)
		deleted.RequireStatus(t, http.StatusOK)
		require.Equal(t, []persist.Upload{}, messageOf(t, deleted).Attachments, "a tombstone shows no files")
		h.Get(t, uploadPath(a.ID), c.mod.Token).RequireStatus(t, http.StatusOK)
	})

	t.Run("NonceRetryWithTheSameUploadIsIdempotent", func(t *testing.T) {
		t.Parallel()
		c := newChat(t, h)
		up := uploadText(t, h, c.alice.Token, c.ws.ID, "once.txt", "once")
		req := map[string]any{"body": "retry me", "upload_id": up.ID, "nonce": "m-1"}
		first := c.post(t, c.alice, channelMessages(c.general.ID), req)
		first.RequireStatus(t, http.StatusCreated)
		again := c.post(t, c.alice, channelMessages(c.general.ID), req)
		again.RequireStatus(t, http.StatusOK)
		require.Equal(t, messageOf(t, first).ID, messageOf(t, again).ID)
		requireOneAttachment(t, messageOf(t, again), up)
		require.Len(t, c.eventsOfType(t, "message.created"), 1)

		other := uploadText(t, h, c.alice.Token, c.ws.ID, "other.txt", "other")
		req["upload_id"] = other.ID
		c.post(t, c.alice, channelMessages(c.general.ID), req).RequireError(t, http.StatusConflict, persist.CodeConflict)
		delete(req, "upload_id")
		c.post(t, c.alice, channelMessages(c.general.ID), req).RequireError(t, http.StatusConflict, persist.CodeConflict)
	})

	t.Run("AFailedCreateLeavesNothing", func(t *testing.T) {
		t.Parallel()
		c := newChat(t, h)
		guest := c.join(t, persist.RoleGuest)
		elsewhere := persisttest.Workspace(t, h.Store, c.alice.User.ID)
		foreign := uploadText(t, h, c.alice.Token, elsewhere.ID, "foreign.txt", "foreign")
		mine := uploadText(t, h, c.alice.Token, c.ws.ID, "mine.txt", "mine")
		_, noUploads := persisttest.Bot(t, h.Store, c.owner.User, c.ws.ID, &persisttest.BotOpts{Scopes: []string{persist.ScopeMessagesWrite}})
		for _, tc := range []struct {
			name   string
			token  string
			path   string
			body   map[string]any
			status int
			code   persist.Code
		}{
			{"UnknownUpload", c.alice.Token, channelMessages(c.general.ID), map[string]any{"body": "x", "upload_id": "upl_nope"}, http.StatusNotFound, persist.CodeNotFound},
			{"UploadOfAnotherWorkspace", c.alice.Token, channelMessages(c.general.ID), map[string]any{"body": "x", "upload_id": foreign.ID}, http.StatusNotFound, persist.CodeNotFound},
			{"Guest", guest.Token, channelMessages(c.guestRoom.ID), map[string]any{"body": "x", "upload_id": mine.ID}, http.StatusForbidden, persist.CodeForbidden},
			{"BotWithoutUploadsWrite", noUploads.Token, channelMessages(c.general.ID), map[string]any{"body": "x", "upload_id": mine.ID}, http.StatusForbidden, persist.CodeMissingScope},
			{"QuoteNotFoundAfterTheUploadChecks", c.alice.Token, channelMessages(c.general.ID), map[string]any{"body": "x", "upload_id": mine.ID, "quoted_message_id": "msg_nope"}, http.StatusNotFound, persist.CodeNotFound},
		} {
			h.Post(t, tc.path, tc.token, tc.body).RequireError(t, tc.status, tc.code)
		}
		require.Empty(t, c.eventsOfType(t, "message.created"))
		require.Empty(t, pageOf(t, h.Get(t, channelMessages(c.general.ID), c.owner.Token)).Messages)
		require.Empty(t, pageOf(t, h.Get(t, channelMessages(c.guestRoom.ID), c.owner.Token)).Messages)
		require.Zero(t, attachmentCount(t, h, c.ws.ID))
		// The guest's failed post gave its budget back.
		for range 3 { // SPEC §Limits: guest posting 3 a day
			c.post(t, guest, channelMessages(c.guestRoom.ID), map[string]any{"body": "hello"}).RequireStatus(t, http.StatusCreated)
		}
	})
}

func TestAttachmentCreate(t *testing.T) {
	t.Parallel()
	h := servertest.New(t)

	t.Run("TheAuthorAttaches", func(t *testing.T) {
		t.Parallel()
		c := newChat(t, h)
		m := c.say(t, c.alice, channelMessages(c.general.ID), "file follows")
		up := uploadText(t, h, c.mod.Token, c.ws.ID, "theirs.txt", "anyone's upload of the workspace")
		r := attach(t, h, c.alice, m.ID, up.ID)
		r.RequireStatus(t, http.StatusOK)
		requireOneAttachment(t, messageOf(t, r), up)
		ev := eventOf(t, r)
		require.Equal(t, "message.updated", ev.Type)
		require.Equal(t, m.ID, ev.MessageID)
		require.Len(t, c.eventsOfType(t, "message.updated"), 1)

		again := attach(t, h, c.alice, m.ID, up.ID)
		again.RequireStatus(t, http.StatusOK)
		require.NotContains(t, again.JSON(t), "event", "nothing changed")
		requireOneAttachment(t, messageOf(t, again), up)
		require.Len(t, c.eventsOfType(t, "message.updated"), 1)
	})

	t.Run("Refusals", func(t *testing.T) {
		t.Parallel()
		c := newChat(t, h)
		guest := c.join(t, persist.RoleGuest)
		timedOut, blocked := c.join(t, persist.RoleMember), c.join(t, persist.RoleMember)
		up := uploadText(t, h, c.alice.Token, c.ws.ID, "f.txt", "f")
		mine := c.say(t, c.alice, channelMessages(c.general.ID), "mine")
		guestMessage := c.say(t, guest, channelMessages(c.guestRoom.ID), "guest post")
		timedOutMessage := c.say(t, timedOut, channelMessages(c.general.ID), "soon timed out")
		blockedMessage := c.say(t, blocked, channelMessages(c.general.ID), "soon blocked")
		c.moderate(t, timedOut, map[string]any{"timeout_minutes": 30})
		c.moderate(t, blocked, map[string]any{"blocked": true})
		deleted := c.say(t, c.alice, channelMessages(c.general.ID), "gone")
		c.del(t, c.alice, "/api/messages/"+deleted.ID).RequireStatus(t, http.StatusOK)
		archived := c.channel(t, "old")
		inArchive := c.say(t, c.alice, channelMessages(archived.ID), "archived soon")
		c.patchChannel(t, archived.ID, map[string]any{"archived": true})
		elsewhere := persisttest.Workspace(t, h.Store, c.alice.User.ID)
		foreign := uploadText(t, h, c.alice.Token, elsewhere.ID, "foreign.txt", "foreign")
		outsider := h.NewUser(t)

		for _, tc := range []struct {
			name              string
			who               servertest.Actor
			messageID, upload string
			status            int
			code              persist.Code
		}{
			{"NotTheAuthor", c.mod, mine.ID, up.ID, http.StatusForbidden, persist.CodeForbidden},
			{"Guest", guest, guestMessage.ID, up.ID, http.StatusForbidden, persist.CodeForbidden},
			{"TimedOut", timedOut, timedOutMessage.ID, up.ID, http.StatusForbidden, persist.CodeForbidden},
			{"Blocked", blocked, blockedMessage.ID, up.ID, http.StatusForbidden, persist.CodeForbidden},
			{"DeletedMessage", c.alice, deleted.ID, up.ID, http.StatusConflict, persist.CodeMessageDeleted},
			{"ArchivedChannel", c.alice, inArchive.ID, up.ID, http.StatusForbidden, persist.CodeForbidden},
			{"UploadOfAnotherWorkspace", c.alice, mine.ID, foreign.ID, http.StatusNotFound, persist.CodeNotFound},
			{"UnknownUpload", c.alice, mine.ID, "upl_nope", http.StatusNotFound, persist.CodeNotFound},
			{"NoUpload", c.alice, mine.ID, "", http.StatusBadRequest, persist.CodeInvalidRequest},
			{"UnknownMessage", c.alice, "msg_nope", up.ID, http.StatusNotFound, persist.CodeNotFound},
			{"NotAMember", outsider, mine.ID, up.ID, http.StatusForbidden, persist.CodeForbidden},
		} {
			r := attach(t, h, tc.who, tc.messageID, tc.upload)
			if r.Status != tc.status {
				t.Errorf("%s: status %d, want %d: %s", tc.name, r.Status, tc.status, r.Body)
				continue
			}
			r.RequireError(t, tc.status, tc.code)
		}
		require.Zero(t, attachmentCount(t, h, c.ws.ID))
		require.Empty(t, c.eventsOfType(t, "message.updated"))
	})

	t.Run("BotTokensNeedBothScopes", func(t *testing.T) {
		t.Parallel()
		c := newChat(t, h)
		bot, both := persisttest.Bot(t, h.Store, c.owner.User, c.ws.ID, &persisttest.BotOpts{
			Scopes: []string{persist.ScopeUploadsWrite, persist.ScopeMessagesWrite}})
		onlyUploads := persisttest.BotToken(t, h.Store, c.owner.User, c.ws.ID, bot.ID, persist.ScopeUploadsWrite)
		onlyMessages := persisttest.BotToken(t, h.Store, c.owner.User, c.ws.ID, bot.ID, persist.ScopeMessagesWrite)
		m := messageOf(t, h.Post(t, channelMessages(c.general.ID), both.Token, map[string]any{"body": "bot post"}))
		up := uploadOf(t, upload(t, h, both.Token, "?workspace_id="+c.ws.ID, filePart{Name: "bot.txt", Data: []byte("bot")}))
		for _, tok := range []string{onlyUploads.Token, onlyMessages.Token} {
			h.Post(t, "/api/messages/"+m.ID+"/attachments", tok, map[string]any{"upload_id": up.ID}).
				RequireError(t, http.StatusForbidden, persist.CodeMissingScope)
		}
		r := h.Post(t, "/api/messages/"+m.ID+"/attachments", both.Token, map[string]any{"upload_id": up.ID})
		r.RequireStatus(t, http.StatusOK)
		requireOneAttachment(t, messageOf(t, r), up)
	})
}

// attach links an upload to a message as who.
func attach(t *testing.T, h *servertest.Harness, who servertest.Actor, messageID, uploadID string) *servertest.Response {
	t.Helper()
	return h.Post(t, "/api/messages/"+messageID+"/attachments", who.Token, map[string]any{"upload_id": uploadID})
}

func uploadIDs(ups []persist.Upload) []string {
	out := []string{}
	for _, u := range ups {
		out = append(out, u.ID)
	}
	return out
}

// attachmentCount counts the attachment rows of a workspace, read from the database.
func attachmentCount(t *testing.T, h *servertest.Harness, workspaceID string) int {
	t.Helper()
	return persisttest.AttachmentCount(t, h.Store, workspaceID)
}
