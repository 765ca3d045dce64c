package admin_test

import (
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestSignInConfiguration(t *testing.T) {
	t.Parallel()
	closed := httptest.NewServer(nil)
	deadIssuer := closed.URL
	closed.Close()
	for _, tc := range []struct {
		name string
		args []string
		flag string
	}{
		{"GitHubIDWithoutSecret", []string{"dev", "--github-client-id", "id"}, "--github-client-secret"},
		{"GitHubSecretWithoutID", []string{"dev", "--github-client-secret", "secret"}, "--github-client-secret"},
		{"OrgWithoutGitHub", []string{"dev", "--github-allowed-org", "natterchat"}, "--github-client-id"},
		{"BadOrg", []string{"dev", "--github-client-id", "id", "--github-client-secret", "s", "--github-allowed-org", "not/an/org"}, "--github-allowed-org"},
		{"BothOrgModes", []string{"dev", "--github-client-id", "id", "--github-client-secret", "s", "--github-allowed-org", "a",
			"--github-moderator-org", "b"}, "--github-moderator-org"},
		{"OIDCIDWithoutSecret", []string{"dev", "--oidc-client-id", "id"}, "--oidc-client-secret"},
		{"PlainHTTPIssuer", []string{"dev", "--oidc-issuer", "http://idp.example.com"}, "--oidc-issuer"},
		{"IssuerWithQuery", []string{"dev", "--oidc-issuer", "https://idp.example.com/?a=b"}, "--oidc-issuer"},
		{"DesktopScheme", []string{"dev", "--desktop-scheme", "https"}, "--desktop-scheme"},
		{"LegacyDesktopScheme", []string{"dev", "--legacy-desktop-scheme", "Not A Scheme"}, "--legacy-desktop-scheme"},
		{"DiscoveryFails", []string{"dev", "--oidc-client-id", "id", "--oidc-client-secret", "s", "--public-url", "http://127.0.0.1:8080",
			"--oidc-issuer", deadIssuer}, "--oidc-issuer"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := run(t, tc.args...)
			require.Error(t, err)
			msg := err.Error()
			require.True(t, strings.HasPrefix(msg, "dev: invalid configuration: "+tc.flag), msg)
			require.NotContains(t, msg, "\n", "one line")
		})
	}
}

// TestSignInEnvironmentVariables: every sign-in flag has its NATTER_ twin.
func TestSignInEnvironmentVariables(t *testing.T) {
	for _, tc := range []struct {
		env  map[string]string
		flag string
	}{
		{map[string]string{"NATTER_GITHUB_CLIENT_ID": "id"}, "--github-client-secret"},
		{map[string]string{"NATTER_GITHUB_CLIENT_SECRET": "secret"}, "--github-client-secret"},
		{map[string]string{"NATTER_GITHUB_CLIENT_ID": "id", "NATTER_GITHUB_CLIENT_SECRET": "s", "NATTER_GITHUB_ALLOWED_ORG": "-bad"}, "--github-allowed-org"},
		{map[string]string{"NATTER_GITHUB_CLIENT_ID": "id", "NATTER_GITHUB_CLIENT_SECRET": "s", "NATTER_GITHUB_MODERATOR_ORG": "-bad"}, "--github-moderator-org"},
		{map[string]string{"NATTER_OIDC_ISSUER": "http://idp.example.com"}, "--oidc-issuer"},
		{map[string]string{"NATTER_OIDC_CLIENT_ID": "id"}, "--oidc-client-secret"},
		{map[string]string{"NATTER_OIDC_CLIENT_SECRET": "secret"}, "--oidc-client-secret"},
		{map[string]string{"NATTER_DESKTOP_SCHEME": "HTTP"}, "--desktop-scheme"},
		{map[string]string{"NATTER_LEGACY_DESKTOP_SCHEME": "https"}, "--legacy-desktop-scheme"},
	} {
		t.Run(strings.TrimPrefix(tc.flag, "--"), func(t *testing.T) {
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			_, err := run(t, "dev")
			require.ErrorContains(t, err, "invalid configuration: "+tc.flag)
		})
	}
}
