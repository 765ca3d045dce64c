package admin

import (
	"context"
	"fmt"
	"log/slog"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/natterchat/natter/server/accessproxy"
	"github.com/natterchat/natter/server/signin"
)

// signInFlags are the sign-in settings of serve and dev: passwords, the identity proxy, GitHub,
// OIDC and the desktop handoff's callback schemes.
func signInFlags() []cli.Flag {
	return []cli.Flag{
		&cli.BoolFlag{Name: "password-auth", EnvVars: []string{"NATTER_PASSWORD_AUTH"},
			Usage: "allow password sign-in and change for accounts an operator enrolled (natter admin password set)"},
		&cli.StringFlag{Name: "proxy-team-domain", EnvVars: []string{"NATTER_PROXY_TEAM_DOMAIN"},
			Usage: "trust Cloudflare Access assertions (Cf-Access-Jwt-Assertion) from this team origin, such as https://example.cloudflareaccess.com; needs --proxy-audience"},
		&cli.StringFlag{Name: "proxy-audience", EnvVars: []string{"NATTER_PROXY_AUDIENCE"},
			Usage: "the Cloudflare Access application's audience tag; needs --proxy-team-domain"},
		&cli.StringFlag{Name: "github-client-id", EnvVars: []string{"NATTER_GITHUB_CLIENT_ID"},
			Usage: "GitHub OAuth app client id; with --github-client-secret it turns GitHub sign-in on"},
		&cli.StringFlag{Name: "github-client-secret", EnvVars: []string{"NATTER_GITHUB_CLIENT_SECRET"},
			Usage: "GitHub OAuth app client secret"},
		&cli.StringFlag{Name: "github-allowed-org", EnvVars: []string{"NATTER_GITHUB_ALLOWED_ORG"},
			Usage: "admit only active members of this GitHub org (they join the default workspace); empty lets any account into the isolated Guests workspace"},
		&cli.StringFlag{Name: "github-moderator-org", EnvVars: []string{"NATTER_GITHUB_MODERATOR_ORG"},
			Usage: "open login only: newcomers wait as guests, and this org's members become moderators of the Guests workspace"},
		&cli.StringFlag{Name: "oidc-issuer", EnvVars: []string{"NATTER_OIDC_ISSUER"}, Value: signin.DefaultOIDCIssuer,
			Usage: "OpenID Connect issuer URL, discovered at start-up (https; http only on loopback)"},
		&cli.StringFlag{Name: "oidc-client-id", EnvVars: []string{"NATTER_OIDC_CLIENT_ID"},
			Usage: "OIDC client id; with --oidc-client-secret and --public-url it turns OIDC sign-in on"},
		&cli.StringFlag{Name: "oidc-client-secret", EnvVars: []string{"NATTER_OIDC_CLIENT_SECRET"},
			Usage: "OIDC client secret"},
		&cli.StringFlag{Name: "desktop-scheme", EnvVars: []string{"NATTER_DESKTOP_SCHEME"}, Value: signin.DefaultDesktopScheme,
			Usage: "URL scheme of the desktop app's sign-in callback (handoff protocol 2)"},
		&cli.StringFlag{Name: "legacy-desktop-scheme", EnvVars: []string{"NATTER_LEGACY_DESKTOP_SCHEME"}, Value: signin.DefaultLegacyDesktopScheme,
			Usage: "URL scheme of the legacy desktop app's sign-in callback (handoff protocol 1)"},
	}
}

// signInConfig is the validated sign-in configuration (passwords are a plain switch).
type signInConfig struct {
	proxy               accessproxy.Config   // zero: identity-proxy sign-in off
	github              *signin.GitHubConfig // nil: GitHub sign-in off
	oidc                *signin.OIDCConfig   // nil: OIDC sign-in off
	desktopScheme       string
	legacyDesktopScheme string
}

func readSignInConfig(c *cli.Context) (signInConfig, error) {
	cfg := signInConfig{desktopScheme: c.String("desktop-scheme"), legacyDesktopScheme: c.String("legacy-desktop-scheme")}
	var err error
	if cfg.proxy, err = readProxyConfig(c); err != nil {
		return cfg, err
	}
	for _, flag := range []string{"desktop-scheme", "legacy-desktop-scheme"} {
		if err := signin.CheckScheme(c.String(flag)); err != nil {
			return cfg, configError(flag, "%v", err)
		}
	}
	id, secret := c.String("github-client-id"), c.String("github-client-secret")
	allowed, moderator := c.String("github-allowed-org"), c.String("github-moderator-org")
	switch {
	case (id == "") != (secret == ""):
		return cfg, configError("github-client-secret", "set --github-client-id and --github-client-secret together")
	case id == "" && (allowed != "" || moderator != ""):
		return cfg, configError("github-client-id", "the GitHub org settings need GitHub sign-in (--github-client-id and --github-client-secret)")
	case allowed != "" && moderator != "":
		return cfg, configError("github-moderator-org", "applies to open login only; with --github-allowed-org every admitted person is a member of the default workspace")
	}
	for flag, org := range map[string]string{"github-allowed-org": allowed, "github-moderator-org": moderator} {
		if org != "" && !signin.ValidOrg(org) {
			return cfg, configError(flag, "%q must be a GitHub organization login (letters, digits and single hyphens, at most 39)", org)
		}
	}
	if id != "" {
		cfg.github = &signin.GitHubConfig{ClientID: id, ClientSecret: secret, AllowedOrg: allowed, ModeratorOrg: moderator}
	}
	issuer := c.String("oidc-issuer")
	if err := signin.CheckIssuer(issuer); err != nil {
		return cfg, configError("oidc-issuer", "%v", err)
	}
	id, secret = c.String("oidc-client-id"), c.String("oidc-client-secret")
	if (id == "") != (secret == "") {
		return cfg, configError("oidc-client-secret", "set --oidc-client-id and --oidc-client-secret together")
	}
	if id != "" {
		cfg.oidc = &signin.OIDCConfig{Issuer: issuer, ClientID: id, ClientSecret: secret}
	}
	return cfg, nil
}

// providers builds the configured sign-in providers; OIDC discovery runs here, at start-up, and
// a failed discovery stops start-up. OIDC without --public-url stays off (its routes answer 501).
func (cfg signInConfig) providers(ctx context.Context, publicURL string, logger *slog.Logger) (*signin.GitHub, *signin.OIDC, error) {
	var gh *signin.GitHub
	if cfg.github != nil {
		var err error
		if gh, err = signin.NewGitHub(*cfg.github); err != nil {
			return nil, nil, usageErrorf("invalid configuration: %w", err)
		}
		if publicURL == "" {
			logger.Warn("GitHub sign-in without --public-url works only for loopback development")
		}
	}
	if cfg.oidc == nil {
		return gh, nil, nil
	}
	if publicURL == "" {
		logger.Warn("OIDC sign-in needs --public-url; it stays off")
		return gh, nil, nil
	}
	o, err := signin.DiscoverOIDC(ctx, *cfg.oidc)
	if err != nil {
		return nil, nil, fmt.Errorf("invalid configuration: %w", err)
	}
	authorize, token, fellBack := o.Endpoints()
	logger.Info("oidc discovered", "issuer", cfg.oidc.Issuer, "authorization_endpoint", authorize, "token_endpoint", token, "fallback", fellBack)
	return gh, o, nil
}

// readProxyConfig reads the identity-proxy flags: both or neither.
func readProxyConfig(c *cli.Context) (accessproxy.Config, error) {
	team, audience := strings.TrimSpace(c.String("proxy-team-domain")), strings.TrimSpace(c.String("proxy-audience"))
	switch {
	case team == "" && audience == "":
		return accessproxy.Config{}, nil
	case audience == "":
		return accessproxy.Config{}, configError("proxy-audience", "must be set together with --proxy-team-domain (or leave both unset)")
	case team == "":
		return accessproxy.Config{}, configError("proxy-team-domain", "must be set together with --proxy-audience (or leave both unset)")
	}
	if _, err := accessproxy.ParseTeamDomain(team); err != nil {
		return accessproxy.Config{}, configError("proxy-team-domain", "%v", err)
	}
	return accessproxy.Config{TeamDomain: team, Audience: audience}, nil
}
