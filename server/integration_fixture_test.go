package server_test

import (
	"net/http"
	"testing"

	"github.com/natterchat/natter/admin/servertest"
)

// integrations are a workspace's integration resources made through the API, with the secrets
// that only their creation responses show.
type integrations struct {
	installationID, installationToken  string
	commandID, commandSecret           string
	subscriptionID, subscriptionSecret string
	accountID                          string
}

// integrationFixtures installs an app through botID in workspaceID as the owner (token), with a
// slash command, an event subscription (to an address nothing listens on) and a connected
// account bound to userID.
func integrationFixtures(t *testing.T, h *servertest.Harness, token, workspaceID, botID, userID string) integrations {
	t.Helper()
	var out integrations
	path := "/api/workspaces/" + workspaceID
	r := h.Post(t, path+"/app-installations", token, map[string]any{"app_slug": "victim-app", "bot_user_id": botID})
	r.RequireStatus(t, http.StatusCreated)
	var inst struct {
		AppInstallation struct{ ID string }    `json:"app_installation"`
		BotToken        struct{ Token string } `json:"bot_token"`
	}
	r.Decode(t, &inst)
	out.installationID, out.installationToken = inst.AppInstallation.ID, inst.BotToken.Token
	r = h.Post(t, path+"/slash-commands", token, map[string]any{"app_installation_id": out.installationID,
		"command": "/victim", "callback_url": "https://hooks.example.com/victim"})
	r.RequireStatus(t, http.StatusCreated)
	var cmd struct {
		SlashCommand struct {
			ID            string
			SigningSecret string `json:"signing_secret"`
		} `json:"slash_command"`
	}
	r.Decode(t, &cmd)
	out.commandID, out.commandSecret = cmd.SlashCommand.ID, cmd.SlashCommand.SigningSecret
	r = h.Post(t, path+"/event-subscriptions", token, map[string]any{"app_installation_id": out.installationID,
		"event_types": []string{"*"}, "callback_url": "https://hooks.example.com/victim"})
	r.RequireStatus(t, http.StatusCreated)
	var sub struct {
		EventSubscription struct {
			ID            string
			SigningSecret string `json:"signing_secret"`
		} `json:"event_subscription"`
	}
	r.Decode(t, &sub)
	out.subscriptionID, out.subscriptionSecret = sub.EventSubscription.ID, sub.EventSubscription.SigningSecret
	r = h.Post(t, path+"/connected-accounts", token, map[string]any{"user_id": userID, "provider": "github",
		"provider_account_id": "victim-42", "display_name": "Victim"})
	r.RequireStatus(t, http.StatusCreated)
	var acc struct {
		ConnectedAccount struct{ ID string } `json:"connected_account"`
	}
	r.Decode(t, &acc)
	out.accountID = acc.ConnectedAccount.ID
	return out
}
