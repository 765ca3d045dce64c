package signin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"golang.org/x/oauth2"

	"github.com/natterchat/natter/outbound"
	"github.com/natterchat/natter/persist"
)

// GitHub's endpoints.
const (
	DefaultGitHubAuthorizeURL = "https://github.com/login/oauth/authorize"
	DefaultGitHubTokenURL     = "https://github.com/login/oauth/access_token"
	DefaultGitHubAPIURL       = "https://api.github.com"
)

// maxProviderBody bounds every provider response read during a sign-in.
const maxProviderBody = 1 << 20

// GitHubConfig configures GitHub sign-in.
type GitHubConfig struct {
	// ClientID and ClientSecret are the OAuth app's credentials. Required.
	ClientID     string
	ClientSecret string
	// AllowedOrg, when set, admits only active members of this org, who join the default
	// workspace. Default "" (any account signs in and joins the isolated Guests workspace).
	AllowedOrg string
	// ModeratorOrg, without AllowedOrg, makes open-login newcomers waiting-room guests and this
	// org's active members moderators of the Guests workspace. Default "" (newcomers are members).
	ModeratorOrg string
	// AuthorizeURL, TokenURL and APIURL are GitHub's endpoints; tests point them at a fake.
	// Defaults DefaultGitHubAuthorizeURL, DefaultGitHubTokenURL, DefaultGitHubAPIURL.
	AuthorizeURL string
	TokenURL     string
	APIURL       string
	// Policy decides which addresses the token exchange and API calls may reach. Default
	// outbound.PublicOnly.
	Policy outbound.Policy
	// Timeout bounds each call to GitHub. Default DefaultTimeout (30s).
	Timeout time.Duration
}

// GitHub is the GitHub OAuth provider.
type GitHub struct {
	cfg    GitHubConfig
	oauth  oauth2.Config
	client *http.Client
}

// NewGitHub validates cfg, naming the flag at fault.
func NewGitHub(cfg GitHubConfig) (*GitHub, error) {
	if cfg.ClientID == "" || cfg.ClientSecret == "" {
		return nil, errors.New("--github-client-id and --github-client-secret must be set together")
	}
	for flag, org := range map[string]string{"--github-allowed-org": cfg.AllowedOrg, "--github-moderator-org": cfg.ModeratorOrg} {
		if org != "" && !ValidOrg(org) {
			return nil, fmt.Errorf("%s %q must be a GitHub organization login (letters, digits and single hyphens, at most 39)", flag, org)
		}
	}
	defaults := []struct {
		field *string
		value string
	}{{&cfg.AuthorizeURL, DefaultGitHubAuthorizeURL}, {&cfg.TokenURL, DefaultGitHubTokenURL}, {&cfg.APIURL, DefaultGitHubAPIURL}}
	for _, d := range defaults {
		if *d.field == "" {
			*d.field = d.value
		}
		if u, err := url.Parse(*d.field); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
			return nil, fmt.Errorf("GitHub endpoint %q must be an absolute http(s) URL", *d.field)
		}
	}
	cfg.APIURL = strings.TrimRight(cfg.APIURL, "/")
	g := &GitHub{cfg: cfg, client: newClient(cfg.Policy, cfg.Timeout)}
	// GitHub takes the client's credentials in the form.
	g.oauth = oauth2.Config{ClientID: cfg.ClientID, ClientSecret: cfg.ClientSecret, Scopes: strings.Fields(g.Scope()),
		Endpoint: oauth2.Endpoint{AuthURL: cfg.AuthorizeURL, TokenURL: cfg.TokenURL, AuthStyle: oauth2.AuthStyleInParams}}
	return g, nil
}

// ValidOrg reports whether s is a GitHub organization login.
func ValidOrg(s string) bool {
	if s == "" || len(s) > 39 || s[0] == '-' || s[len(s)-1] == '-' || strings.Contains(s, "--") {
		return false
	}
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-') {
			return false
		}
	}
	return true
}

// Scope is the OAuth scope requested: the profile and email, plus read:org in the org-gated and
// moderator-org modes (GitHub reveals private org membership only with it).
func (g *GitHub) Scope() string {
	if g.cfg.AllowedOrg != "" || g.cfg.ModeratorOrg != "" {
		return "read:user user:email read:org"
	}
	return "read:user user:email"
}

// AuthorizeURL is where the browser goes to authorize: GitHub's page with the state, the exact
// redirect URI and the S256 challenge of the transaction's verifier.
func (g *GitHub) AuthorizeURL(state, challenge, redirectURI string) string {
	return authCodeURL(g.oauth, state, challenge, redirectURI)
}

// SignIn finishes a sign-in at GitHub: it exchanges the code with the stored verifier and exact
// redirect URI, reads the account and its verified primary email, checks org membership as
// configured, and says where the person is placed (rule 5 of §Code-hosting OAuth).
// Codes: provider_failed (GitHub failed or refused the code), forbidden (not an active member of
// the allowed org).
func (g *GitHub) SignIn(ctx context.Context, code, verifier, redirectURI string) (persist.ExternalIdentity, persist.Placement, error) {
	var none persist.ExternalIdentity
	token, err := g.exchange(ctx, code, verifier, redirectURI)
	if err != nil {
		return none, persist.Placement{}, err
	}
	id, err := g.account(ctx, token)
	if err != nil {
		return none, persist.Placement{}, err
	}
	switch {
	case g.cfg.AllowedOrg != "":
		ok, err := g.activeMember(ctx, token, g.cfg.AllowedOrg)
		if err != nil {
			return none, persist.Placement{}, err
		}
		if !ok {
			return none, persist.Placement{}, persist.Forbidden("this server admits only active members of the GitHub organization %s", g.cfg.AllowedOrg)
		}
		return id, persist.Placement{Workspace: persist.PlaceDefault, Role: persist.RoleMember}, nil
	case g.cfg.ModeratorOrg != "":
		ok, err := g.activeMember(ctx, token, g.cfg.ModeratorOrg)
		if err != nil {
			return none, persist.Placement{}, err
		}
		role := persist.RoleGuest
		if ok {
			role = persist.RoleModerator
		}
		return id, persist.Placement{Workspace: persist.PlaceGuests, Role: role}, nil
	}
	return id, persist.Placement{Workspace: persist.PlaceGuests, Role: persist.RoleMember}, nil
}

func (g *GitHub) exchange(ctx context.Context, code, verifier, redirectURI string) (string, error) {
	token, err := exchange(ctx, g.client, g.oauth, code, verifier, redirectURI, "GitHub")
	if err != nil {
		return "", err
	}
	return token.AccessToken, nil
}

func (g *GitHub) account(ctx context.Context, token string) (persist.ExternalIdentity, error) {
	var user struct {
		ID        int64  `json:"id"`
		Login     string `json:"login"`
		Name      string `json:"name"`
		AvatarURL string `json:"avatar_url"`
	}
	if err := g.get(ctx, token, "/user", &user); err != nil {
		return persist.ExternalIdentity{}, err
	}
	if user.ID <= 0 {
		return persist.ExternalIdentity{}, providerFailed("GitHub returned an account without an id")
	}
	var emails []struct {
		Email    string `json:"email"`
		Primary  bool   `json:"primary"`
		Verified bool   `json:"verified"`
	}
	if err := g.get(ctx, token, "/user/emails", &emails); err != nil {
		return persist.ExternalIdentity{}, err
	}
	id := persist.ExternalIdentity{Provider: persist.ProviderGitHub, Subject: strconv.FormatInt(user.ID, 10),
		Login: user.Login, DisplayName: user.Name, AvatarURL: user.AvatarURL}
	for _, e := range emails {
		if e.Primary && e.Verified {
			id.Email = e.Email
		}
	}
	return id, nil
}

// activeMember reports whether the token's account is an active member of org. A pending
// invitation, or an org that hides the membership (404, 403), is not membership.
func (g *GitHub) activeMember(ctx context.Context, token, org string) (bool, error) {
	var m struct {
		State string `json:"state"`
	}
	err := g.get(ctx, token, "/user/memberships/orgs/"+url.PathEscape(org), &m)
	var status *statusError
	if errors.As(err, &status) && (status.code == http.StatusNotFound || status.code == http.StatusForbidden) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return m.State == "active", nil
}

func (g *GitHub) get(ctx context.Context, token, path string, dst any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, g.cfg.APIURL+path, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Accept", "application/vnd.github+json")
	req.Header.Set("X-GitHub-Api-Version", "2022-11-28")
	return g.call(req, dst)
}

// call sends req and decodes a 200 JSON answer into dst. Any other outcome is a statusError or
// a provider failure; the cause is kept for the log, never shown.
func (g *GitHub) call(req *http.Request, dst any) error {
	return callJSON(g.client, req, dst, "GitHub")
}

// statusError is a provider's non-200 answer.
type statusError struct{ code int }

func (e *statusError) Error() string { return fmt.Sprintf("status %d", e.code) }

// callJSON sends req with client and decodes a 200 JSON answer of at most maxProviderBody bytes.
// Failures are provider_failed errors wrapping the cause (a *statusError for a non-200 answer).
func callJSON(client *http.Client, req *http.Request, dst any, provider string) error {
	resp, err := client.Do(req)
	if err != nil {
		return &persist.Error{Code: persist.CodeProviderFailed,
			Message: provider + " could not be reached; try again", Err: err}
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return &persist.Error{Code: persist.CodeProviderFailed,
			Message: fmt.Sprintf("%s answered %d; try again", provider, resp.StatusCode), Err: &statusError{resp.StatusCode}}
	}
	body, err := readLimited(resp.Body, maxProviderBody)
	if err == nil {
		err = json.Unmarshal(body, dst)
	}
	if err != nil {
		return &persist.Error{Code: persist.CodeProviderFailed,
			Message: provider + " sent an answer that could not be read", Err: err}
	}
	return nil
}

func providerFailed(format string, args ...any) *persist.Error {
	return persist.Errorf(persist.CodeProviderFailed, format, args...)
}

// safeWord keeps a provider's error code fit to show: letters, digits and '_' only.
func safeWord(s string) string {
	var b strings.Builder
	for _, c := range s {
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' {
			b.WriteRune(c)
		}
		if b.Len() >= 64 {
			break
		}
	}
	if b.Len() == 0 {
		return "no reason given"
	}
	return b.String()
}
