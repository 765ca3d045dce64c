package persist

import (
	"slices"
	"strings"
)

// Bot-token scopes of the spec's §Bot scopes. Routes name the scope they need in the route table;
// the store checks ScopeAgentActivityWrite itself, since it depends on the request body.
const (
	ScopeWorkspacesRead     = "workspaces:read"
	ScopeChannelsRead       = "channels:read"
	ScopeChannelsWrite      = "channels:write"
	ScopeMessagesRead       = "messages:read"
	ScopeMessagesWrite      = "messages:write"
	ScopeAgentActivityWrite = "agent_activity:write"
	ScopeThreadsRead        = "threads:read"
	ScopeThreadsWrite       = "threads:write"
	ScopeDMsRead            = "dms:read"
	ScopeDMsWrite           = "dms:write"
	ScopeRealtimeRead       = "realtime:read"
	ScopeUploadsWrite       = "uploads:write"
	ScopeProfileRead        = "profile:read"
	ScopeCommandsWrite      = "commands:write"
)

// AllScopes lists every concrete scope.
var AllScopes = []string{
	ScopeWorkspacesRead, ScopeChannelsRead, ScopeChannelsWrite, ScopeMessagesRead, ScopeMessagesWrite,
	ScopeAgentActivityWrite, ScopeThreadsRead, ScopeThreadsWrite, ScopeDMsRead, ScopeDMsWrite,
	ScopeRealtimeRead, ScopeUploadsWrite, ScopeProfileRead, ScopeCommandsWrite,
}

// DefaultScopes is what a token gets when its request names none.
var DefaultScopes = []string{"bot:write"}

// botRead is the spec's read bundle plus profile:read: runtimes call GET /api/me first to learn
// their own id, so every bundle must allow it (CONTRACT.md §Compatibility).
var botRead = []string{ScopeWorkspacesRead, ScopeChannelsRead, ScopeMessagesRead, ScopeThreadsRead,
	ScopeDMsRead, ScopeRealtimeRead, ScopeProfileRead}

// scopeBundles are expanded into concrete scopes when a token is issued, so a later change here
// never widens an existing token. agent_activity:write is in none of them: it is granted only
// when named.
var scopeBundles = map[string][]string{
	"bot:read": botRead,
	"bot:write": append(slices.Clone(botRead), ScopeMessagesWrite, ScopeThreadsWrite, ScopeDMsWrite,
		ScopeUploadsWrite, ScopeCommandsWrite),
	"bot:admin": slices.DeleteFunc(slices.Clone(AllScopes), func(s string) bool { return s == ScopeAgentActivityWrite }),
}

// IsScope reports whether s is a concrete scope.
func IsScope(s string) bool { return slices.Contains(AllScopes, s) }

// ExpandScopes turns requested scopes and bundles (entries may also be comma-separated lists)
// into the sorted, de-duplicated concrete scopes a token stores. Nothing requested gives
// DefaultScopes. Codes: invalid_request (an unknown scope or bundle).
func ExpandScopes(requested []string) ([]string, error) {
	var out []string
	for _, entry := range requested {
		for _, part := range strings.Split(entry, ",") {
			s := strings.TrimSpace(part)
			switch {
			case s == "":
			case scopeBundles[s] != nil:
				out = append(out, scopeBundles[s]...)
			case IsScope(s):
				out = append(out, s)
			default:
				return nil, Invalid("unknown scope %q; scopes are %s, or the bundles bot:read, bot:write and bot:admin",
					s, strings.Join(AllScopes, ", "))
			}
		}
	}
	if len(out) == 0 {
		return ExpandScopes(DefaultScopes)
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}
