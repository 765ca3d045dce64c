package server

import (
	"net/http"
	"strings"

	"github.com/go-chi/chi/v5"

	"github.com/natterchat/natter/persist"
)

// setupContractVersion is the setup-code contract this server speaks: claim_url is the exact
// endpoint, never to be extended by consumers.
const setupContractVersion = 1

// setupContract is what setup-code responses tell an installer about where to reach the API.
type setupContract struct {
	ContractVersion int    `json:"contract_version"`
	ClaimURL        string `json:"claim_url,omitempty"`
	APIBaseURL      string `json:"api_base_url"`
}

// contract returns the setup contract fields for a request. The base is --api-base-url, else
// --public-url, else the scheme and host the request was sent to: ClickClack installers read
// these fields on every answer (CONTRACT.md §Compatibility), and a deployment behind a proxy
// that changes the host or terminates TLS sets one of the two flags.
func (s *Server) contract(r *http.Request) setupContract {
	base := s.apiBaseURL
	if base == "" {
		base = s.publicOrigin
	}
	if base == "" {
		scheme := "http"
		if r.TLS != nil {
			scheme = "https"
		}
		base = scheme + "://" + strings.ToLower(r.Host)
	}
	return setupContract{ContractVersion: setupContractVersion, APIBaseURL: base,
		ClaimURL: base + "/api/bot-setup-codes/claim"}
}

type setupCodeRequest struct {
	Name     string                `json:"name"`
	Scopes   []string              `json:"scopes"`
	Defaults persist.SetupDefaults `json:"defaults"`
}

// setupCodeView is a minted code; the contract fields appear both inside it (where ClickClack
// installers read them) and beside it (CONTRACT.md §Shapes not written here).
type setupCodeView struct {
	persist.SetupCode
	setupContract
}

// handleBotSetupCodeCreate serves POST /api/workspaces/{workspace_id}/bots/{bot_user_id}/setup-codes:
// 201 {setup_code: {code, expires_at, contract_version, claim_url, api_base_url, …}} with the
// plaintext code shown once; the contract fields are repeated beside setup_code.
func (s *Server) handleBotSetupCodeCreate(w http.ResponseWriter, r *http.Request) {
	var req setupCodeRequest
	if err := decodeOptionalJSON(w, r, &req); err != nil {
		s.writeError(w, r, err)
		return
	}
	ctx := r.Context()
	code, err := persist.WithTxV(ctx, s.store, func(tx *persist.Tx) (persist.SetupCode, error) {
		return tx.BotSetupCodeCreate(ctx, callerOf(ctx).Actor(), chi.URLParam(r, "workspace_id"), chi.URLParam(r, "bot_user_id"),
			persist.SetupCodeParams{Name: req.Name, Scopes: req.Scopes, Defaults: req.Defaults})
	})
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	c := s.contract(r)
	writeJSON(w, http.StatusCreated, struct {
		SetupCode setupCodeView `json:"setup_code"`
		setupContract
	}{setupCodeView{code, c}, c})
}

type setupClaimRequest struct {
	Code string `json:"code"`
}

type setupClaimBot struct {
	ID          string `json:"id"`
	Kind        string `json:"kind"`
	OwnerUserID string `json:"owner_user_id,omitempty"`
	Handle      string `json:"handle,omitempty"`
	DisplayName string `json:"display_name"`
}

type setupClaimWorkspace struct {
	ID      string `json:"id"`
	RouteID string `json:"route_id"`
	Slug    string `json:"slug"`
	Name    string `json:"name"`
}

type setupClaimResponse struct {
	Token           string                `json:"token"`
	Bot             setupClaimBot         `json:"bot"`
	Workspace       setupClaimWorkspace   `json:"workspace"`
	Defaults        persist.SetupDefaults `json:"defaults"`
	ContractVersion int                   `json:"contract_version"`
	APIBaseURL      string                `json:"api_base_url"`
}

// handleBotSetupCodeClaim serves POST /api/bot-setup-codes/claim: unauthenticated and rate
// limited per client address; it consumes the code and mints its token at once, answering
// {token, bot, workspace, defaults, api_base_url, contract_version}.
// Unknown, expired and claimed codes all get the same 404.
func (s *Server) handleBotSetupCodeClaim(w http.ResponseWriter, r *http.Request) {
	if _, err := s.claimLimiter.allow(r.Context(), clientAddress(r)); err != nil {
		s.writeError(w, r, err)
		return
	}
	var req setupClaimRequest
	if err := decodeJSON(w, r, &req); err != nil {
		s.writeError(w, r, err)
		return
	}
	ctx := r.Context()
	claim, err := persist.WithTxV(ctx, s.store, func(tx *persist.Tx) (persist.SetupClaim, error) {
		return tx.BotSetupCodeClaim(ctx, req.Code)
	})
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	c := s.contract(r)
	b, ws := claim.Bot, claim.Workspace
	writeJSON(w, http.StatusOK, setupClaimResponse{Token: claim.Token.Token,
		Bot:       setupClaimBot{ID: b.ID, Kind: b.Kind, OwnerUserID: b.OwnerUserID, Handle: b.Handle, DisplayName: b.DisplayName},
		Workspace: setupClaimWorkspace{ID: ws.ID, RouteID: ws.RouteID, Slug: ws.Slug, Name: ws.Name},
		Defaults:  claim.Defaults, ContractVersion: c.ContractVersion, APIBaseURL: c.APIBaseURL})
}
