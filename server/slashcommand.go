package server

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"

	"github.com/go-chi/chi/v5"

	"github.com/natterchat/natter/outbound"
	"github.com/natterchat/natter/persist"
)

type slashCommandCreateRequest struct {
	AppInstallationID string `json:"app_installation_id"`
	Command           string `json:"command"`
	Description       string `json:"description"`
	CallbackURL       string `json:"callback_url"`
	BotUserID         string `json:"bot_user_id"`
}

// handleSlashCommandCreate serves POST /api/workspaces/{workspace_id}/slash-commands:
// 201 {slash_command} with its one-time signing_secret.
func (s *Server) handleSlashCommandCreate(w http.ResponseWriter, r *http.Request) {
	var req slashCommandCreateRequest
	if err := decodeJSON(w, r, &req); err != nil {
		s.writeError(w, r, err)
		return
	}
	ctx := r.Context()
	c, err := persist.WithTxV(ctx, s.store, func(tx *persist.Tx) (persist.SlashCommand, error) {
		return tx.SlashCommandCreate(ctx, callerOf(ctx).Actor(), chi.URLParam(r, "workspace_id"), persist.SlashCommandCreateParams{
			AppInstallationID: req.AppInstallationID, Command: req.Command, Description: req.Description,
			CallbackURL: req.CallbackURL, BotUserID: req.BotUserID})
	})
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, map[string]any{"slash_command": c})
}

// handleSlashCommandList serves GET /api/workspaces/{workspace_id}/slash-commands:
// {slash_commands}, the active ones, secrets redacted.
func (s *Server) handleSlashCommandList(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	list, err := persist.WithTxV(ctx, s.store, func(tx *persist.Tx) ([]persist.SlashCommand, error) {
		return tx.SlashCommandList(ctx, callerOf(ctx).Actor(), chi.URLParam(r, "workspace_id"))
	})
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"slash_commands": list})
}

// handleSlashCommandRevoke serves POST /api/slash-commands/{command_id}/revoke: {slash_command}.
func (s *Server) handleSlashCommandRevoke(w http.ResponseWriter, r *http.Request) {
	s.slashCommandChange(w, r, (*persist.Tx).SlashCommandRevoke)
}

// handleSlashCommandRotateSecret serves POST /api/slash-commands/{command_id}/rotate-secret:
// {slash_command} with a fresh one-time signing_secret; 400 when revoked.
func (s *Server) handleSlashCommandRotateSecret(w http.ResponseWriter, r *http.Request) {
	s.slashCommandChange(w, r, (*persist.Tx).SlashCommandRotateSecret)
}

func (s *Server) slashCommandChange(w http.ResponseWriter, r *http.Request,
	change func(*persist.Tx, context.Context, persist.Actor, string) (persist.SlashCommand, error)) {
	ctx := r.Context()
	c, err := persist.WithTxV(ctx, s.store, func(tx *persist.Tx) (persist.SlashCommand, error) {
		return change(tx, ctx, callerOf(ctx).Actor(), chi.URLParam(r, "command_id"))
	})
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"slash_command": c})
}

// slashPayload is what a registered command's callback receives (integration rule 3).
type slashPayload struct {
	CommandID   string `json:"command_id"`
	Command     string `json:"command"`
	Text        string `json:"text"`
	WorkspaceID string `json:"workspace_id"`
	ChannelID   string `json:"channel_id"`
	UserID      string `json:"user_id"`
	BotUserID   string `json:"bot_user_id"`
	TriggerID   string `json:"trigger_id"`
}

// slashReply is a callback's answer; response_type defaults to in_channel.
type slashReply struct {
	ResponseType string `json:"response_type"`
	Text         string `json:"text"`
}

// handleSlashHook serves POST /api/hooks/slash/{channel_id} (form-encoded command and text).
// An unregistered command posts "<command> <text>" as the caller: 201 {response_type:
// in_channel, text, message, event}. A registered one is persisted (the caller's write authority
// checked, a guest's post spent), then its callback is called, signed, outside any transaction,
// and its outcome stored; an in_channel reply text is posted as the command's bot: 201
// {response_type, text, message?, event?}. A callback that fails or answers non-2xx gives 502
// callback_failed.
func (s *Server) handleSlashHook(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, maxJSONBody)
	if err := r.ParseForm(); err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			s.writeError(w, r, persist.Errorf(persist.CodeBodyTooLarge, "the body is larger than %d bytes", maxJSONBody))
			return
		}
		s.writeError(w, r, persist.Invalid("the body must be form-encoded command and text"))
		return
	}
	if err := checkFormText(r); err != nil {
		s.writeError(w, r, err)
		return
	}
	command, text := r.PostForm.Get("command"), r.PostForm.Get("text")
	ctx := r.Context()
	st, err := persist.WithTxV(ctx, s.store, func(tx *persist.Tx) (persist.SlashStarted, error) {
		return tx.SlashCommandStart(ctx, callerOf(ctx).Actor(), chi.URLParam(r, "channel_id"), command, text)
	})
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if st.Posted != nil {
		writeJSON(w, http.StatusCreated, map[string]any{"response_type": "in_channel", "text": st.Text,
			"message": st.Posted.Message, "event": st.Posted.Event})
		return
	}
	reply, err := s.slashCallback(ctx, *st.Invocation)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	out := map[string]any{"response_type": reply.ResponseType, "text": reply.Text}
	if reply.Text != "" && reply.ResponseType == "in_channel" {
		posted, err := persist.WithTxV(ctx, s.store, func(tx *persist.Tx) (persist.MessageCreated, error) {
			return tx.SlashCommandReply(ctx, *st.Invocation, reply.Text, correlationID(ctx))
		})
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		out["message"], out["event"] = posted.Message, posted.Event
	}
	writeJSON(w, http.StatusCreated, out)
}

// slashCallback calls an invocation's callback and stores its outcome, even when the caller
// has gone away meanwhile. Codes: callback_failed.
func (s *Server) slashCallback(ctx context.Context, inv persist.SlashInvocation) (slashReply, error) {
	body, err := json.Marshal(slashPayload{CommandID: inv.CommandID, Command: inv.Command, Text: inv.Text,
		WorkspaceID: inv.WorkspaceID, ChannelID: inv.ChannelID, UserID: inv.UserID, BotUserID: inv.BotUserID,
		TriggerID: inv.ID})
	if err != nil {
		return slashReply{}, err
	}
	res := s.callbacks.Post(ctx, outbound.Callback{URL: inv.CallbackURL, Secret: inv.SigningSecret, Body: body})
	outcome := persist.SlashCallbackOutcome{Status: res.Status, Body: string(res.Body), Error: res.Problem()}
	store := context.WithoutCancel(ctx)
	if err := s.store.WithTx(store, func(tx *persist.Tx) error { return tx.SlashCommandComplete(store, inv, outcome) }); err != nil {
		return slashReply{}, err
	}
	if outcome.Error != "" {
		s.logger.Info("slash command callback failed", "command_id", inv.CommandID, "workspace_id", inv.WorkspaceID,
			"status", res.Status, "error", outcome.Error)
		// The caller reads one fixed sentence per class of failure; the detail (which may name
		// internal resolvers and addresses) stays in the stored invocation and the log.
		return slashReply{}, persist.Errorf(persist.CodeCallbackFailed, "the command's callback failed: %s", res.Failure())
	}
	var reply slashReply
	_ = json.Unmarshal(res.Body, &reply) // a body that is no reply posts nothing
	if !validText(reply.Text) {
		return slashReply{}, persist.Errorf(persist.CodeCallbackFailed, "the command's callback failed: its reply text holds a NUL byte")
	}
	if reply.ResponseType != "ephemeral" {
		reply.ResponseType = "in_channel"
	}
	return reply, nil
}

type mattermostHookRequest struct {
	Text string `json:"text"`
}

// handleMattermostHook serves POST /api/hooks/mattermost/{channel_id}: a Mattermost-compatible
// incoming webhook. {text} is posted as a Markdown message by the caller (other fields are
// ignored): 201 {message, event}.
func (s *Server) handleMattermostHook(w http.ResponseWriter, r *http.Request) {
	var req mattermostHookRequest
	if err := decodeJSON(w, r, &req); err != nil {
		s.writeError(w, r, err)
		return
	}
	ctx := r.Context()
	res, err := persist.WithTxV(ctx, s.store, func(tx *persist.Tx) (persist.MessageCreated, error) {
		return tx.MessageCreate(ctx, callerOf(ctx).Actor(), persist.Place{ChannelID: chi.URLParam(r, "channel_id")},
			persist.MessageCreateParams{Body: req.Text})
	})
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, messageAndEvent(res.Message, res.Event))
}
