package admin_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/natterchat/natter/admin"
)

// TestUsageErrors: every command reports a command line it cannot run as one line naming the
// command ("natter: " is main's), as a usage error (exit 2), and prints no help text.
func TestUsageErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		env  map[string]string
		args []string
		want string
	}{
		{"MisspeltFlag", nil, []string{"serve", "--databse-url", "postgres://x@y/z"}, "serve: unknown flag --databse-url"},
		{"MissingRequiredFlag", nil, []string{"admin", "member", "add", "--email", "a@example.com"}, "admin member add: required flag --workspace not set"},
		{"BadFlagValue", nil, []string{"admin", "workspace", "list", "--json=maybe"}, `admin workspace list: invalid boolean value "maybe" for --json: parse error`},
		{"BadEnvValue", map[string]string{"NATTER_MAX_SOCKETS_PER_USER": "many"}, []string{"serve"},
			`serve: could not parse "many" as int value from environment variable "NATTER_MAX_SOCKETS_PER_USER" for flag max-sockets-per-user: strconv.ParseInt: parsing "many": invalid syntax`},
		{"UnknownSubcommand", nil, []string{"admin", "migrate"}, `admin: no command "migrate" (natter admin --help lists them)`},
		{"UnknownCommand", nil, []string{"frobnicate"}, `no command "frobnicate" (natter --help lists them)`},
		{"MySQLURL", nil, []string{"serve", "--database-url", "mysql://root:pw@db/natter"},
			"serve: invalid configuration: --database-url: a mysql:// URL; natter needs PostgreSQL: postgres://user:password@host:5432/database"},
		{"AdminMySQLURL", nil, []string{"admin", "workspace", "list", "--database-url", "mysql://root:pw@db/natter"},
			"admin workspace list: invalid configuration: --database-url: a mysql:// URL; natter needs PostgreSQL: postgres://user:password@host:5432/database"},
		{"ConfigRule", nil, []string{"dev", "--log-format", "yaml"}, `dev: invalid configuration: --log-format: "yaml" must be text or json`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			out, errOut, err := runBoth(t, tc.args...)
			require.Error(t, err)
			require.Equal(t, tc.want, err.Error())
			require.True(t, admin.IsUsageError(err), "a usage error: exit 2")
			require.Empty(t, out, "no help text")
			require.Empty(t, errOut, "no help text")
		})
	}
}
