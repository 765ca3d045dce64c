package persist_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/natterchat/natter/persist"
)

func TestExpandScopes(t *testing.T) {
	t.Parallel()
	// Every bundle holds profile:read, so a runtime can call GET /api/me (CONTRACT.md §Compatibility).
	read := []string{"channels:read", "dms:read", "messages:read", "profile:read", "realtime:read", "threads:read", "workspaces:read"}
	write := []string{"channels:read", "commands:write", "dms:read", "dms:write", "messages:read", "messages:write",
		"profile:read", "realtime:read", "threads:read", "threads:write", "uploads:write", "workspaces:read"}
	admin := []string{"channels:read", "channels:write", "commands:write", "dms:read", "dms:write", "messages:read",
		"messages:write", "profile:read", "realtime:read", "threads:read", "threads:write", "uploads:write", "workspaces:read"}
	for _, tc := range []struct {
		name string
		in   []string
		want []string
	}{
		{"BotReadIsTheReadScopes", []string{"bot:read"}, read},
		{"BotWriteAddsWrites", []string{"bot:write"}, write},
		{"BotAdminIsEverythingButAgentActivity", []string{"bot:admin"}, admin},
		{"AgentActivityOnlyWhenNamed", []string{"bot:admin", "agent_activity:write"}, append([]string{"agent_activity:write"}, admin...)},
		{"NothingGivesBotWrite", nil, write},
		{"BlankEntriesGiveBotWrite", []string{" ", ","}, write},
		{"CommaSeparatedAndDeduplicated", []string{"profile:read, channels:read", "channels:read"}, []string{"channels:read", "profile:read"}},
		{"ConcreteScopeAlone", []string{"commands:write"}, []string{"commands:write"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := persist.ExpandScopes(tc.in)
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
			for _, s := range got {
				require.True(t, persist.IsScope(s), s)
			}
		})
	}
	t.Run("UnknownScopeIsInvalid", func(t *testing.T) {
		t.Parallel()
		for _, in := range [][]string{{"bot:everything"}, {"messages:read", "admin"}, {"Messages:Read"}} {
			_, err := persist.ExpandScopes(in)
			e, ok := persist.ErrorOf(err)
			require.True(t, ok, "%v", in)
			require.Equal(t, persist.CodeInvalidRequest, e.Code)
		}
	})
	t.Run("AllScopesHasFourteen", func(t *testing.T) {
		t.Parallel()
		require.Len(t, persist.AllScopes, 14)
	})
}

func TestNormalizeSetupCode(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in, want string
		ok       bool
	}{
		{"ABCD-EFGH-JKLM", "ABCD-EFGH-JKLM", true},
		{"abcd-efgh-jklm", "ABCD-EFGH-JKLM", true},
		{"abcdefghjklm", "ABCD-EFGH-JKLM", true},
		{" ab cd-ef gh jk-lm ", "ABCD-EFGH-JKLM", true},
		{"ABCD-EFGH-JKL", "", false},
		{"ABCD-EFGH-JKLMN", "", false},
		{"ABCD-EFGH-JKL0", "", false}, // 0, O, 1 and I are not in the alphabet
		{"ABCD-EFGH-JKLI", "", false},
		{"ABCD_EFGH_JKLM", "", false},
		{"ÄBCD-EFGH-JKLM", "", false},
		{"", "", false},
	} {
		got, ok := persist.NormalizeSetupCode(tc.in)
		require.Equal(t, tc.ok, ok, tc.in)
		require.Equal(t, tc.want, got, tc.in)
	}
}

func TestNormalizeBotCommand(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in, want string
		ok       bool
	}{
		{"/deploy", "/deploy", true},
		{"Deploy", "/deploy", true},
		{"  /Run_Tests-2 ", "/run_tests-2", true},
		{"/" + "abcdefghijabcdefghijabcdefghijab", "/abcdefghijabcdefghijabcdefghijab", true},
		{"/" + "abcdefghijabcdefghijabcdefghijabc", "", false},
		{"/", "", false},
		{"", "", false},
		{"//deploy", "", false},
		{"/de ploy", "", false},
		{"/déploy", "", false},
	} {
		got, err := persist.NormalizeBotCommand(tc.in)
		if !tc.ok {
			require.Error(t, err, tc.in)
			continue
		}
		require.NoError(t, err, tc.in)
		require.Equal(t, tc.want, got, tc.in)
	}
}
