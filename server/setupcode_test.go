package server_test

import (
	"net/http"
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/natterchat/natter/admin/servertest"
	"github.com/natterchat/natter/persist"
	"github.com/natterchat/natter/persist/persisttest"
	"github.com/natterchat/natter/server"
)

var setupCodePattern = regexp.MustCompile(`^[A-Z2-9]{4}-[A-Z2-9]{4}-[A-Z2-9]{4}$`)

// mintSetupCode mints a code for botID as as and returns its plaintext.
func mintSetupCode(t *testing.T, w *botWorld, as servertest.Actor, botID string, body map[string]any) string {
	t.Helper()
	if body == nil {
		body = map[string]any{}
	}
	r := w.h.Post(t, w.botsPath()+"/"+botID+"/setup-codes", as.Token, body)
	r.RequireStatus(t, http.StatusCreated)
	var out struct {
		SetupCode persist.SetupCode `json:"setup_code"`
	}
	r.Decode(t, &out)
	require.Regexp(t, setupCodePattern, out.SetupCode.Code)
	return out.SetupCode.Code
}

// claim claims code without credentials.
func claim(t *testing.T, h *servertest.Harness, code string) *servertest.Response {
	t.Helper()
	return h.Post(t, "/api/bot-setup-codes/claim", "", map[string]any{"code": code})
}

type claimed struct {
	Token string `json:"token"`
	Bot   struct {
		ID          string `json:"id"`
		Kind        string `json:"kind"`
		Handle      string `json:"handle"`
		DisplayName string `json:"display_name"`
	} `json:"bot"`
	Workspace struct {
		ID      string `json:"id"`
		RouteID string `json:"route_id"`
		Slug    string `json:"slug"`
		Name    string `json:"name"`
	} `json:"workspace"`
	Defaults        persist.SetupDefaults `json:"defaults"`
	ContractVersion int                   `json:"contract_version"`
	APIBaseURL      string                `json:"api_base_url"`
}

func claimOK(t *testing.T, h *servertest.Harness, code string) claimed {
	t.Helper()
	r := claim(t, h, code)
	r.RequireStatus(t, http.StatusOK)
	var out claimed
	r.Decode(t, &out)
	return out
}

func TestSetupCodes(t *testing.T) {
	t.Parallel()
	clock := persisttest.NewClock()
	w := newBotWorld(t, servertest.WithClock(clock))
	persisttest.Channel(t, w.h.Store, persist.ActorFor(w.owner.User), w.ws.ID, "random")
	persisttest.Channel(t, w.h.Store, persist.ActorFor(w.owner.User), w.ws.ID, "general")
	bot := w.createBot(t, w.owner, map[string]any{"display_name": "Gateway", "handle": "gateway", "initial_token": false}, http.StatusCreated).Bot

	t.Run("MintThenClaimMintsTheToken", func(t *testing.T) {
		t.Parallel()
		r := w.h.Post(t, w.botsPath()+"/"+bot.ID+"/setup-codes", w.owner.Token, map[string]any{"name": "gateway", "scopes": []string{"bot:read"}})
		r.RequireStatus(t, http.StatusCreated)
		body := r.JSON(t)
		require.Equal(t, float64(1), body["contract_version"], "without a configured base, the request's own")
		require.Equal(t, w.h.URL, body["api_base_url"])
		require.Equal(t, w.h.URL+"/api/bot-setup-codes/claim", body["claim_url"])
		var minted struct {
			SetupCode persist.SetupCode `json:"setup_code"`
		}
		r.Decode(t, &minted)
		require.Regexp(t, setupCodePattern, minted.SetupCode.Code)
		require.Equal(t, clock.Now().Add(10*time.Minute), minted.SetupCode.ExpiresAt)
		require.Equal(t, "gateway", minted.SetupCode.TokenName)
		for _, tok := range w.tokens(t, w.owner, bot.ID) {
			require.NotEqual(t, "gateway", tok.Name, "no token exists before the claim")
		}

		got := claimOK(t, w.h, minted.SetupCode.Code)
		require.Regexp(t, `^ccb_`, got.Token)
		require.Equal(t, bot.ID, got.Bot.ID)
		require.Equal(t, "gateway", got.Bot.Handle)
		require.Equal(t, persist.KindBot, got.Bot.Kind)
		require.Equal(t, "Gateway", got.Bot.DisplayName)
		require.Equal(t, w.ws.ID, got.Workspace.ID)
		require.Equal(t, w.ws.RouteID, got.Workspace.RouteID)
		require.Equal(t, w.ws.Slug, got.Workspace.Slug)
		require.Equal(t, "channel:general", got.Defaults.DefaultTo, "generic codes suggest #general")
		require.Equal(t, 1, got.ContractVersion)
		require.Equal(t, w.h.URL, got.APIBaseURL)

		w.h.Get(t, "/api/workspaces/"+w.ws.ID+"/bot-commands", got.Token).RequireStatus(t, http.StatusOK)
		var found bool
		for _, tok := range w.tokens(t, w.owner, bot.ID) {
			if tok.Name == "gateway" {
				found = true
				require.Equal(t, w.owner.User.ID, tok.CreatedBy)
				require.Equal(t, persist.ScopeChannelsRead, tok.Scopes[0], "bundles expanded when minted")
			}
		}
		require.True(t, found)
	})
	t.Run("SingleUseAndOneAnswerForEveryDeadCode", func(t *testing.T) {
		t.Parallel()
		w := newBotWorld(t) // its own address budget
		bot, _ := w.serviceBot(t)
		code := mintSetupCode(t, w, w.owner, bot.ID, map[string]any{"name": "single"})
		claimOK(t, w.h, code)
		used := claim(t, w.h, code)
		used.RequireError(t, http.StatusNotFound, persist.CodeNotFound)
		for _, other := range []string{"AAAA-BBBB-CCCC", "not a code", ""} {
			r := claim(t, w.h, other)
			r.RequireError(t, http.StatusNotFound, persist.CodeNotFound)
			require.Equal(t, used.Body, r.Body, "unknown and claimed codes are indistinguishable")
		}
	})
	t.Run("CaseAndSeparatorsIgnored", func(t *testing.T) {
		t.Parallel()
		code := mintSetupCode(t, w, w.owner, bot.ID, map[string]any{"name": "typed"})
		claimOK(t, w.h, " "+code[0:4]+" "+code[5:9]+code[10:14]+" ")
	})
	t.Run("RemintReplacesThePendingCodeOfThatName", func(t *testing.T) {
		t.Parallel()
		first := mintSetupCode(t, w, w.owner, bot.ID, map[string]any{"name": "rotating"})
		other := mintSetupCode(t, w, w.owner, bot.ID, map[string]any{"name": "unrelated"})
		second := mintSetupCode(t, w, w.owner, bot.ID, map[string]any{"name": "rotating"})
		claim(t, w.h, first).RequireError(t, http.StatusNotFound, persist.CodeNotFound)
		claimOK(t, w.h, second)
		claimOK(t, w.h, other)
	})
	t.Run("WizardDefaultsTravelToTheClaim", func(t *testing.T) {
		t.Parallel()
		defaults := map[string]any{"defaultTo": "channel:ops", "allowFrom": []string{"usr_a", "usr_b"}, "agentActivity": true}
		r := w.h.Post(t, w.botsPath()+"/"+bot.ID+"/setup-codes", w.owner.Token, map[string]any{"name": "wizard", "defaults": defaults})
		r.RequireError(t, http.StatusBadRequest, persist.CodeInvalidRequest) // agentActivity needs its scope
		code := mintSetupCode(t, w, w.owner, bot.ID, map[string]any{"name": "wizard", "scopes": []string{"bot:write", "agent_activity:write"}, "defaults": defaults})
		got := claimOK(t, w.h, code)
		require.Equal(t, "channel:ops", got.Defaults.DefaultTo)
		require.Equal(t, []string{"usr_a", "usr_b"}, got.Defaults.AllowFrom)
		require.True(t, *got.Defaults.AgentActivity)
	})
	t.Run("Authority", func(t *testing.T) {
		t.Parallel()
		path := w.botsPath() + "/" + bot.ID + "/setup-codes"
		w.h.Post(t, path, w.member.Token, nil).RequireError(t, http.StatusForbidden, persist.CodeForbidden)
		w.h.Post(t, path, w.outsider.Token, nil).RequireError(t, http.StatusForbidden, persist.CodeForbidden)
		mine := w.createBot(t, w.member, map[string]any{"display_name": "Mine", "owner_user_id": w.member.User.ID}, http.StatusCreated)
		w.h.Post(t, w.botsPath()+"/"+mine.Bot.ID+"/setup-codes", w.owner.Token, nil).RequireError(t, http.StatusForbidden, persist.CodeForbidden)
		w.h.Post(t, w.botsPath()+"/"+mine.Bot.ID+"/setup-codes", mine.BotToken.Token, nil).RequireError(t, http.StatusForbidden, persist.CodeHumanOnly)
		mintSetupCode(t, w, w.member, mine.Bot.ID, nil)
	})
}

func TestSetupCodeExpiry(t *testing.T) {
	t.Parallel()
	clock := persisttest.NewClock()
	w := newBotWorld(t, servertest.WithClock(clock))
	bot, _ := w.serviceBot(t)
	almost := mintSetupCode(t, w, w.owner, bot.ID, map[string]any{"name": "almost"})
	late := mintSetupCode(t, w, w.owner, bot.ID, map[string]any{"name": "late"})
	unknown := claim(t, w.h, "AAAA-BBBB-CCCC")
	clock.Advance(10*time.Minute - time.Second) // SPEC §Limits: setup code 10-minute expiry
	claimOK(t, w.h, almost)
	clock.Advance(time.Second)
	r := claim(t, w.h, late)
	r.RequireError(t, http.StatusNotFound, persist.CodeNotFound)
	require.Equal(t, unknown.Body, r.Body, "expired looks like unknown")
	tokens := w.tokens(t, w.owner, bot.ID)
	for _, tok := range tokens {
		require.NotEqual(t, "late", tok.Name, "an expired code never creates a token")
	}
}

func TestSetupCodeDefaultChannel(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		channels []string
		want     string
	}{
		{"GeneralWinsEvenWhenNewer", []string{"alpha", "general"}, "channel:general"},
		{"ElseTheOldestChannel", []string{"beta", "alpha"}, "channel:beta"},
		{"NeverTheGuestRoom", []string{persist.GuestChannel, "later"}, "channel:later"},
		{"NoneWithoutChannels", nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			w := newBotWorld(t)
			for _, c := range tc.channels {
				persisttest.Channel(t, w.h.Store, persist.ActorFor(w.owner.User), w.ws.ID, c)
			}
			bot, _ := w.serviceBot(t)
			got := claimOK(t, w.h, mintSetupCode(t, w, w.owner, bot.ID, nil))
			require.Equal(t, tc.want, got.Defaults.DefaultTo)
		})
	}
}

// TestSetupCodeContract checks where api_base_url comes from: --api-base-url, else
// --public-url, else the scheme and host the request was sent to.
func TestSetupCodeContract(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		config func(*server.Config)
		host   string // the request's Host header, when set
		base   string
	}{
		{"APIBaseURLWins", func(c *server.Config) {
			c.APIBaseURL, c.PublicURL = "https://Chat.Example.com/natter/", "https://public.example.com"
		}, "", "https://chat.example.com/natter"},
		{"ThenThePublicURL", func(c *server.Config) { c.PublicURL = "https://Public.Example.com" }, "", "https://public.example.com"},
		{"ElseTheRequestHost", func(*server.Config) {}, "Chat.Example.org:8443", "http://chat.example.org:8443"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			w := newBotWorld(t, servertest.WithConfig(tc.config))
			bot, _ := w.serviceBot(t)
			header := map[string]string{}
			if tc.host != "" {
				header["Host"] = tc.host
			}
			r := w.h.Do(t, servertest.Request{Method: http.MethodPost, Path: w.botsPath() + "/" + bot.ID + "/setup-codes",
				Token: w.owner.Token, Header: header})
			r.RequireStatus(t, http.StatusCreated)
			body := r.JSON(t)
			for _, m := range []map[string]any{body, body["setup_code"].(map[string]any)} {
				require.Equal(t, float64(1), m["contract_version"])
				require.Equal(t, tc.base, m["api_base_url"])
				require.Equal(t, tc.base+"/api/bot-setup-codes/claim", m["claim_url"])
			}
			r = w.h.Do(t, servertest.Request{Method: http.MethodPost, Path: "/api/bot-setup-codes/claim",
				Body: map[string]any{"code": body["setup_code"].(map[string]any)["code"]}, Header: header})
			r.RequireStatus(t, http.StatusOK)
			var got claimed
			r.Decode(t, &got)
			require.Equal(t, 1, got.ContractVersion)
			require.Equal(t, tc.base, got.APIBaseURL)
		})
	}
}

func TestSetupCodeClaimRateLimit(t *testing.T) {
	t.Parallel()
	clock := persisttest.NewClock()
	w := newBotWorld(t, servertest.WithClock(clock))
	bot, _ := w.serviceBot(t)
	code := mintSetupCode(t, w, w.owner, bot.ID, nil)
	for range 10 {
		claim(t, w.h, "AAAA-BBBB-CCCC").RequireError(t, http.StatusNotFound, persist.CodeNotFound)
	}
	r := claim(t, w.h, code)
	r.RequireError(t, http.StatusTooManyRequests, persist.CodeRateLimited)
	require.Equal(t, "6", r.Header.Get("Retry-After"), "one claim back every 6 seconds")
	clock.Advance(time.Minute)
	claimOK(t, w.h, code)
}
