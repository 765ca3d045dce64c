package server_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/natterchat/natter/persist"
	"github.com/natterchat/natter/persist/persisttest"
	"github.com/natterchat/natter/server"
	"github.com/natterchat/natter/server/signin"
)

// Rule 3 of §Code-hosting OAuth: accounts match by provider user id only; later sign-ins fill an
// empty email, keep an existing one and a user-edited name; a provider avatar replaces only a
// blank or email-derived one.

// patchMe changes the browser's own profile through PATCH /api/me.
func patchMe(t *testing.T, b *browser, body map[string]any) {
	t.Helper()
	b.do(t, http.MethodPatch, "/api/me", body, map[string]string{"X-Natter-CSRF": "1"}).RequireStatus(t, http.StatusOK)
}

func TestGitHubIdentity(t *testing.T) {
	t.Parallel()

	t.Run("EmailNeverLinksAccounts", func(t *testing.T) {
		t.Parallel()
		w := newGitHubWorld(t, nil)
		existing := persisttest.User(t, w.h.Store, &persisttest.UserOpts{Email: persisttest.Ptr("octocat@example.com")})
		_, me := w.signedIn(t, octocat())
		require.NotEqual(t, existing.ID, me["id"], "the GitHub account gets its own user, not the one holding its email")
		require.Nil(t, me["email"], "the email stays with the account that holds it")
	})

	t.Run("SameAccountSameUser", func(t *testing.T) {
		t.Parallel()
		w := newGitHubWorld(t, nil)
		_, first := w.signedIn(t, octocat())
		renamed := octocat()
		renamed.Login, renamed.Email = "octo-renamed", "new-address@example.com"
		_, again := w.signedIn(t, renamed)
		require.Equal(t, first["id"], again["id"])
		require.Equal(t, "octocat@example.com", again["email"], "an existing email is kept")
		other := octocat()
		other.ID++
		_, stranger := w.signedIn(t, other)
		require.NotEqual(t, first["id"], stranger["id"], "another GitHub id is another person, whatever its email")
	})

	t.Run("LaterSignInFillsEmptyEmail", func(t *testing.T) {
		t.Parallel()
		w := newGitHubWorld(t, nil)
		a := octocat()
		a.Unverified = true
		_, me := w.signedIn(t, a)
		require.Nil(t, me["email"], "an unverified primary email is not taken")
		a.Unverified = false
		_, me = w.signedIn(t, a)
		require.Equal(t, "octocat@example.com", me["email"])
	})

	t.Run("EmptyEmailNotFilledWithAnotherAccountsEmail", func(t *testing.T) {
		t.Parallel()
		w := newGitHubWorld(t, nil)
		a := octocat()
		a.Email = ""
		_, me := w.signedIn(t, a)
		persisttest.User(t, w.h.Store, &persisttest.UserOpts{Email: persisttest.Ptr("octocat@example.com")})
		_, me2 := w.signedIn(t, octocat())
		require.Equal(t, me["id"], me2["id"])
		require.Nil(t, me2["email"])
	})

	t.Run("ProviderNameFollowsUntilTheUserEditsIt", func(t *testing.T) {
		t.Parallel()
		w := newGitHubWorld(t, nil)
		a := octocat()
		b, _ := w.signedIn(t, a)
		a.Name = "Octo Renamed"
		_, me := w.signedIn(t, a)
		require.Equal(t, "Octo Renamed", me["display_name"], "an unedited name follows the provider")
		patchMe(t, b, map[string]any{"display_name": "My Own Name"})
		a.Name = "Octo Again"
		_, me = w.signedIn(t, a)
		require.Equal(t, "My Own Name", me["display_name"], "a user-edited name is kept")
	})

	t.Run("NameFallsBackToLogin", func(t *testing.T) {
		t.Parallel()
		w := newGitHubWorld(t, nil)
		a := octocat()
		a.Name = ""
		_, me := w.signedIn(t, a)
		require.Equal(t, "octocat", me["display_name"])
	})

	t.Run("ProviderAvatarReplacesOnlyBlankOrEmailDerived", func(t *testing.T) {
		t.Parallel()
		w := newGitHubWorld(t, nil)
		a := octocat()
		a.AvatarURL = ""
		b, me := w.signedIn(t, a)
		fallback := persist.User{Email: "octocat@example.com"}.Avatar()
		require.Equal(t, fallback, me["avatar_url"], "without a provider avatar the email-derived one shows")

		a.AvatarURL = "https://avatars.example.com/first"
		_, me = w.signedIn(t, a)
		require.Equal(t, "https://avatars.example.com/first", me["avatar_url"], "a blank avatar takes the provider's")

		patchMe(t, b, map[string]any{"avatar_url": fallback})
		a.AvatarURL = "https://avatars.example.com/second"
		_, me = w.signedIn(t, a)
		require.Equal(t, "https://avatars.example.com/second", me["avatar_url"], "an email-derived avatar takes the provider's")

		patchMe(t, b, map[string]any{"avatar_url": "https://example.com/me.png"})
		a.AvatarURL = "https://avatars.example.com/third"
		_, me = w.signedIn(t, a)
		require.Equal(t, "https://example.com/me.png", me["avatar_url"], "an explicit avatar is kept")
	})
}

// workspaceRoles lists the browser's workspaces as slug → role.
func workspaceRoles(t *testing.T, b *browser) map[string]string {
	t.Helper()
	_, bySlug := rolesOf(t, b.get(t, "/api/workspaces"))
	return bySlug
}

// Rule 5 of §Code-hosting OAuth: where a sign-in lands, by org mode.
func TestGitHubWorkspaceModes(t *testing.T) {
	t.Parallel()

	t.Run("OpenLoginJoinsGuestsWorkspaceAsMembers", func(t *testing.T) {
		t.Parallel()
		w := newGitHubWorld(t, nil)
		b1, _ := w.signedIn(t, octocat())
		other := octocat()
		other.ID, other.Login, other.Email = 2, "hubot", "hubot@example.com"
		b2, _ := w.signedIn(t, other)
		require.Equal(t, map[string]string{persist.GuestsWorkspaceSlug: persist.RoleMember}, workspaceRoles(t, b1))
		require.Equal(t, map[string]string{persist.GuestsWorkspaceSlug: persist.RoleMember}, workspaceRoles(t, b2))
	})

	t.Run("ModeratorOrgMakesGuestsAndModerators", func(t *testing.T) {
		t.Parallel()
		w := newGitHubWorld(t, func(g *signin.GitHubConfig, _ *server.Config) { g.ModeratorOrg = "natterchat" })
		b := newBrowser(t, w.h)
		require.Equal(t, "read:user user:email read:org", location(t, w.start(t, b)).Query().Get("scope"))

		outsider := octocat()
		ob, _ := w.signedIn(t, outsider)
		require.Equal(t, map[string]string{persist.GuestsWorkspaceSlug: persist.RoleGuest}, workspaceRoles(t, ob))
		pending := octocat()
		pending.ID, pending.Orgs = 7, map[string]string{"natterchat": "pending"}
		pb, _ := w.signedIn(t, pending)
		require.Equal(t, persist.RoleGuest, workspaceRoles(t, pb)[persist.GuestsWorkspaceSlug], "a pending invitation is not membership")
		staff := octocat()
		staff.ID, staff.Orgs = 9, map[string]string{"natterchat": "active"}
		sb, _ := w.signedIn(t, staff)
		require.Equal(t, persist.RoleModerator, workspaceRoles(t, sb)[persist.GuestsWorkspaceSlug])

		// A waiting-room guest sees only #guest.
		var ws struct {
			Workspaces []struct {
				ID string `json:"id"`
			} `json:"workspaces"`
		}
		ob.get(t, "/api/workspaces").Decode(t, &ws)
		var channels struct {
			Channels []struct {
				Name string `json:"name"`
			} `json:"channels"`
		}
		ob.get(t, "/api/workspaces/"+ws.Workspaces[0].ID+"/channels").Decode(t, &channels)
		require.Len(t, channels.Channels, 1)
		require.Equal(t, persist.GuestChannel, channels.Channels[0].Name)

		// The guest who joins the org becomes a moderator at the next sign-in.
		outsider.Orgs = map[string]string{"natterchat": "active"}
		w.signedIn(t, outsider)
		require.Equal(t, persist.RoleModerator, workspaceRoles(t, ob)[persist.GuestsWorkspaceSlug])
		require.NotEmpty(t, w.h.Events(t, ws.Workspaces[0].ID, "member.moderation_updated"))
	})

	t.Run("AllowedOrgAdmitsOnlyActiveMembers", func(t *testing.T) {
		t.Parallel()
		w := newGitHubWorld(t, func(g *signin.GitHubConfig, _ *server.Config) { g.AllowedOrg = "natterchat" })
		require.Equal(t, "read:user user:email read:org", location(t, w.start(t, newBrowser(t, w.h))).Query().Get("scope"))

		outsider := octocat()
		w.signIn(t, newBrowser(t, w.h), outsider).RequireError(t, http.StatusForbidden, persist.CodeForbidden)
		pending := octocat()
		pending.Orgs = map[string]string{"natterchat": "pending"}
		w.signIn(t, newBrowser(t, w.h), pending).RequireError(t, http.StatusForbidden, persist.CodeForbidden)
		ctx := t.Context()
		_, err := persist.WithTxV(ctx, w.h.Store, func(tx *persist.Tx) (persist.User, error) {
			return tx.UserGetByEmail(ctx, "octocat@example.com")
		})
		require.Error(t, err, "a refused account leaves no user behind")

		first := octocat()
		first.Orgs = map[string]string{"natterchat": "active"}
		fb, _ := w.signedIn(t, first)
		roles := workspaceRoles(t, fb)
		require.Len(t, roles, 1)
		require.NotContains(t, roles, persist.GuestsWorkspaceSlug)
		for _, role := range roles {
			require.Equal(t, persist.RoleOwner, role, "the first person into a server without a default workspace owns the new one")
		}
		second := first
		second.ID, second.Email = 42, "second@example.com"
		sb, _ := w.signedIn(t, second)
		for slug := range roles {
			require.Equal(t, map[string]string{slug: persist.RoleMember}, workspaceRoles(t, sb))
		}
	})

	t.Run("AllowedOrgJoinsExistingDefaultWorkspace", func(t *testing.T) {
		t.Parallel()
		w := newGitHubWorld(t, func(g *signin.GitHubConfig, _ *server.Config) { g.AllowedOrg = "natterchat" })
		ctx := t.Context()
		boot, err := persist.WithTxV(ctx, w.h.Store, func(tx *persist.Tx) (persist.Bootstrap, error) { return tx.DevBootstrap(ctx) })
		require.NoError(t, err)
		a := octocat()
		a.Orgs = map[string]string{"natterchat": "active"}
		b, _ := w.signedIn(t, a)
		require.Equal(t, map[string]string{boot.Workspace.Slug: persist.RoleMember}, workspaceRoles(t, b))
	})
}
