package server

import (
	"context"
	"net/http"
	"net/url"
	"strconv"

	"github.com/go-chi/chi/v5"

	"github.com/natterchat/natter/persist"
)

type eventSubscriptionCreateRequest struct {
	AppInstallationID string   `json:"app_installation_id"`
	EventTypes        []string `json:"event_types"`
	CallbackURL       string   `json:"callback_url"`
}

// handleEventSubscriptionCreate serves POST /api/workspaces/{workspace_id}/event-subscriptions:
// 201 {event_subscription} with its one-time signing_secret.
func (s *Server) handleEventSubscriptionCreate(w http.ResponseWriter, r *http.Request) {
	var req eventSubscriptionCreateRequest
	if err := decodeJSON(w, r, &req); err != nil {
		s.writeError(w, r, err)
		return
	}
	ctx := r.Context()
	sub, err := persist.WithTxV(ctx, s.store, func(tx *persist.Tx) (persist.EventSubscription, error) {
		return tx.EventSubscriptionCreate(ctx, callerOf(ctx).Actor(), chi.URLParam(r, "workspace_id"),
			persist.EventSubscriptionCreateParams{AppInstallationID: req.AppInstallationID, EventTypes: req.EventTypes,
				CallbackURL: req.CallbackURL})
	})
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, map[string]any{"event_subscription": sub})
}

// handleEventSubscriptionList serves GET /api/workspaces/{workspace_id}/event-subscriptions:
// {event_subscriptions}, active ones, secrets redacted.
func (s *Server) handleEventSubscriptionList(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	list, err := persist.WithTxV(ctx, s.store, func(tx *persist.Tx) ([]persist.EventSubscription, error) {
		return tx.EventSubscriptionList(ctx, callerOf(ctx).Actor(), chi.URLParam(r, "workspace_id"))
	})
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"event_subscriptions": list})
}

// handleEventSubscriptionRevoke serves POST /api/event-subscriptions/{subscription_id}/revoke:
// {event_subscription}.
func (s *Server) handleEventSubscriptionRevoke(w http.ResponseWriter, r *http.Request) {
	s.eventSubscriptionChange(w, r, (*persist.Tx).EventSubscriptionRevoke)
}

// handleEventSubscriptionRotateSecret serves POST
// /api/event-subscriptions/{subscription_id}/rotate-secret: {event_subscription} with a fresh
// one-time signing_secret; 400 when revoked.
func (s *Server) handleEventSubscriptionRotateSecret(w http.ResponseWriter, r *http.Request) {
	s.eventSubscriptionChange(w, r, (*persist.Tx).EventSubscriptionRotateSecret)
}

func (s *Server) eventSubscriptionChange(w http.ResponseWriter, r *http.Request,
	change func(*persist.Tx, context.Context, persist.Actor, string) (persist.EventSubscription, error)) {
	ctx := r.Context()
	sub, err := persist.WithTxV(ctx, s.store, func(tx *persist.Tx) (persist.EventSubscription, error) {
		return change(tx, ctx, callerOf(ctx).Actor(), chi.URLParam(r, "subscription_id"))
	})
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"event_subscription": sub})
}

// handleEventDeliveryList serves GET /api/event-subscriptions/{subscription_id}/deliveries:
// {deliveries, next_cursor}, newest first; query limit (1-200, default 50) and before (an
// attempt id).
func (s *Server) handleEventDeliveryList(w http.ResponseWriter, r *http.Request) {
	before, limit, err := parseNewestFirstPage(r.URL.Query(), persist.DeliveryPageDefault)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	ctx := r.Context()
	page, err := persist.WithTxV(ctx, s.store, func(tx *persist.Tx) (persist.DeliveryPage, error) {
		return tx.EventDeliveryList(ctx, callerOf(ctx).Actor(), chi.URLParam(r, "subscription_id"), before, limit)
	})
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, page)
}

// parseNewestFirstPage reads limit (default def; a non-integer is 400, the store checks the
// range) and before, the paging of deliveries and the audit log. Codes: invalid_request.
func parseNewestFirstPage(q url.Values, def int) (before string, limit int, err error) {
	limit = def
	if v := q.Get("limit"); v != "" {
		if limit, err = strconv.Atoi(v); err != nil {
			return "", 0, persist.Invalid("limit must be an integer")
		}
	}
	return q.Get("before"), limit, nil
}

// handleEventTypes serves GET /api/event-types: {event_types}, the durable vocabulary event
// subscriptions accept, for any authenticated caller.
func (s *Server) handleEventTypes(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{"event_types": persist.EventTypes})
}
