package server

import (
	"net/http"
	"strings"

	"github.com/go-chi/chi/v5"

	"github.com/natterchat/natter/persist"
)

// routeTable is every route of the API, one line each: method, pattern, requirement, handler.
// TestRouteTable walks the router and fails on a route that is missing here or from the
// OpenAPI document.
func (s *Server) routeTable() []route {
	return []route{
		{"GET", "/healthz", public, s.handleHealthz},
		{"GET", "/readyz", public, s.handleReadyz},
		{"GET", "/metrics", public, s.handleMetrics},
		{"GET", "/api/openapi.json", public, s.handleOpenAPI},

		{"POST", "/api/auth/magic/request", public, s.handleMagicLinkRequest},
		{"POST", "/api/auth/magic/consume", public, s.handleMagicLinkConsume},
		{"GET", "/api/email/unsubscribe", public, s.handleUnsubscribe},
		{"POST", "/api/email/unsubscribe", public, s.handleUnsubscribe},
		{"POST", "/api/auth/logout", optional, s.handleLogout},

		{"GET", "/api/me", member(persist.ScopeProfileRead), s.handleMeGet},
		{"PATCH", "/api/me", human, s.handleMeUpdate},
		{"GET", "/api/me/sessions", human, s.handleSessionList},
		{"POST", "/api/me/sessions/revoke-others", human, s.handleSessionRevokeOthers},

		// Workspaces, members, moderation, channels and route ids.
		{"GET", "/api/workspaces", member(persist.ScopeWorkspacesRead), s.handleWorkspaceList},
		{"POST", "/api/workspaces", human, s.handleWorkspaceCreate},
		{"GET", "/api/workspaces/{workspace_id}", member(persist.ScopeWorkspacesRead), s.handleWorkspaceGet},
		{"PATCH", "/api/workspaces/{workspace_id}", human, s.handleWorkspaceUpdate},
		{"DELETE", "/api/workspaces/{workspace_id}", human, s.handleWorkspaceDelete},
		{"POST", "/api/workspaces/{workspace_id}/transfer-ownership", human, s.handleWorkspaceTransferOwnership},
		{"GET", "/api/workspaces/{workspace_id}/export", human, s.handleWorkspaceExport},
		{"GET", "/api/workspaces/{workspace_id}/members", member(persist.ScopeWorkspacesRead), s.handleMemberList},
		{"GET", "/api/workspaces/{workspace_id}/members/{user_id}", member(persist.ScopeWorkspacesRead), s.handleMemberGet},
		{"DELETE", "/api/workspaces/{workspace_id}/members/{user_id}", human, s.handleMemberRemove},
		{"GET", "/api/workspaces/{workspace_id}/presence", member(persist.ScopeWorkspacesRead), s.handlePresence},
		{"GET", "/api/workspaces/{workspace_id}/moderation/members", human, s.handleModerationList},
		{"PATCH", "/api/workspaces/{workspace_id}/moderation/members/{user_id}", human, s.handleModerationUpdate},
		{"POST", "/api/workspaces/{workspace_id}/invites", human, s.handleInviteCreate},
		{"GET", "/api/workspaces/{workspace_id}/invites", human, s.handleInviteList},
		{"DELETE", "/api/workspaces/{workspace_id}/invites/{invite_id}", human, s.handleInviteRevoke},
		{"POST", "/api/invites/accept", human, s.handleInviteAccept},
		{"GET", "/api/workspaces/{workspace_id}/membership", member(persist.ScopeWorkspacesRead), s.handleMemberStanding},
		{"GET", "/api/workspaces/{workspace_id}/channels", member(persist.ScopeChannelsRead), s.handleChannelList},
		{"POST", "/api/workspaces/{workspace_id}/channels", member(persist.ScopeChannelsWrite), s.handleChannelCreate},
		{"PATCH", "/api/channels/{channel_id}", member(persist.ScopeChannelsWrite), s.handleChannelUpdate},
		{"GET", "/api/channels/{channel_id}/members", member(persist.ScopeChannelsRead), s.handleChannelMemberList},
		{"POST", "/api/channels/{channel_id}/members", member(persist.ScopeChannelsWrite), s.handleChannelMemberAdd},
		{"DELETE", "/api/channels/{channel_id}/members/{user_id}", member(persist.ScopeChannelsWrite), s.handleChannelMemberRemove},
		{"GET", "/api/workspaces/{workspace_id}/channels/browse", member(persist.ScopeChannelsRead), s.handleChannelBrowse},
		{"POST", "/api/channels/{channel_id}/join", human, s.handleChannelJoin},
		{"POST", "/api/channels/{channel_id}/leave", human, s.handleChannelLeave},
		{"PUT", "/api/channels/{channel_id}/star", human, s.handleChannelStarSet},
		{"DELETE", "/api/channels/{channel_id}/star", human, s.handleChannelStarSet},
		{"GET", "/api/workspaces/{workspace_id}/moderation/channels", human, s.handleModerationChannelList},
		{"GET", "/api/routes/{workspace_route_id}/{target_route_id}", member(persist.ScopeWorkspacesRead), s.handleRouteResolve},

		// Messages, threads, reactions, pins, direct conversations, search and read state.
		{"GET", "/api/channels/{channel_id}/messages", member(persist.ScopeMessagesRead), s.handleChannelMessageList},
		{"POST", "/api/channels/{channel_id}/messages", member(persist.ScopeMessagesWrite), s.handleChannelMessageCreate},
		{"POST", "/api/channels/{channel_id}/read", member(persist.ScopeMessagesRead), s.handleChannelRead},
		{"GET", "/api/channels/{channel_id}/pins", member(persist.ScopeMessagesRead), s.handlePinList},
		{"POST", "/api/channels/{channel_id}/pins", member(persist.ScopeMessagesWrite), s.handlePinAdd},
		{"DELETE", "/api/channels/{channel_id}/pins/{message_id}", member(persist.ScopeMessagesWrite), s.handlePinRemove},
		{"GET", "/api/messages/by-nonce", member(persist.ScopeMessagesRead).withHeaders(messageNonceHeaders...), s.handleMessageByNonce},
		{"GET", "/api/messages/{message_id}", member(persist.ScopeMessagesRead), s.handleMessageGet},
		{"PATCH", "/api/messages/{message_id}", member(persist.ScopeMessagesWrite), s.handleMessageUpdate},
		{"DELETE", "/api/messages/{message_id}", member(persist.ScopeMessagesWrite), s.handleMessageDelete},
		{"GET", "/api/messages/{message_id}/thread", member(persist.ScopeThreadsRead), s.handleThreadGet},
		{"POST", "/api/messages/{message_id}/thread/replies", member(persist.ScopeThreadsWrite), s.handleThreadReplyCreate},
		{"POST", "/api/messages/{message_id}/thread/read", member(persist.ScopeThreadsRead), s.handleThreadRead},
		{"GET", "/api/workspaces/{workspace_id}/threads", member(persist.ScopeThreadsRead), s.handleThreadList},
		{"GET", "/api/workspaces/{workspace_id}/mentions", member(persist.ScopeMessagesRead), s.handleMentionList},
		{"POST", "/api/messages/{message_id}/reactions", member(persist.ScopeMessagesWrite), s.handleReactionAdd},
		{"DELETE", "/api/messages/{message_id}/reactions/{emoji}", member(persist.ScopeMessagesWrite), s.handleReactionRemove},
		{"GET", "/api/dms", member(persist.ScopeDMsRead), s.handleDMList},
		// Creating, hiding and reopening a conversation answer with it: they read it too.
		{"POST", "/api/dms", member(persist.ScopeDMsWrite, persist.ScopeDMsRead), s.handleDMCreate},
		{"GET", "/api/dms/{conversation_id}", member(persist.ScopeDMsRead), s.handleDMGet},
		{"DELETE", "/api/dms/{conversation_id}", member(persist.ScopeDMsWrite, persist.ScopeDMsRead), s.handleDMHide},
		{"POST", "/api/dms/{conversation_id}/open", member(persist.ScopeDMsWrite, persist.ScopeDMsRead), s.handleDMOpen},
		{"GET", "/api/dms/{conversation_id}/messages", member(persist.ScopeDMsRead), s.handleDMMessageList},
		{"POST", "/api/dms/{conversation_id}/messages", member(persist.ScopeDMsWrite), s.handleDMMessageCreate},
		{"POST", "/api/dms/{conversation_id}/read", member(persist.ScopeDMsRead), s.handleDMRead},
		{"GET", "/api/search", member(persist.ScopeMessagesRead), s.handleSearch},

		// Realtime: backfill, WebSocket, ephemeral events.
		{"GET", "/api/realtime/events", member(persist.ScopeRealtimeRead), s.handleRealtimeEvents},
		{"GET", "/api/realtime/ws", member(persist.ScopeRealtimeRead), s.handleRealtimeSocket},
		{"POST", "/api/realtime/ephemeral", member(persist.ScopeMessagesWrite), s.handleRealtimeEphemeral},

		// Bots, tokens, setup codes and command menus.
		{"GET", "/api/me/bots", human, s.handleMyBots},
		{"POST", "/api/workspaces/{workspace_id}/bots", human, s.handleBotCreate},
		{"GET", "/api/workspaces/{workspace_id}/bots", human, s.handleBotList},
		{"DELETE", "/api/workspaces/{workspace_id}/bots/{bot_user_id}/membership", human, s.handleBotMembershipRemove},
		{"GET", "/api/workspaces/{workspace_id}/bots/{bot_user_id}/tokens", human, s.handleBotTokenList},
		{"POST", "/api/workspaces/{workspace_id}/bots/{bot_user_id}/tokens", human, s.handleBotTokenCreate},
		{"POST", "/api/workspaces/{workspace_id}/bots/{bot_user_id}/setup-codes", human, s.handleBotSetupCodeCreate},
		{"POST", "/api/bot-setup-codes/claim", public, s.handleBotSetupCodeClaim},
		{"DELETE", "/api/bots/{bot_user_id}", human, s.handleBotDelete},
		{"GET", "/api/bots/{bot_user_id}/tokens", human, s.handleLegacyBotTokenList},
		{"POST", "/api/bots/{bot_user_id}/tokens", human, s.handleLegacyBotTokenCreate},
		{"POST", "/api/bot-tokens/{token_id}/revoke", human, s.handleBotTokenRevoke},
		{"PUT", "/api/bots/self/commands", botOnly(persist.ScopeCommandsWrite), s.handleBotCommandsReplace},
		{"GET", "/api/workspaces/{workspace_id}/bot-commands", member(persist.ScopeWorkspacesRead), s.handleBotCommandList},

		// Uploads and attachments.
		{"POST", "/api/uploads", member(persist.ScopeUploadsWrite), s.handleUploadCreate},
		{"GET", "/api/uploads/by-nonce", member(persist.ScopeUploadsWrite).withHeaders(uploadNonceHeaders...), s.handleUploadByNonce},
		{"GET", "/api/uploads/{upload_id}", member(persist.ScopeMessagesRead), s.handleUploadGet},
		{"POST", "/api/messages/{message_id}/attachments", member(persist.ScopeUploadsWrite, persist.ScopeMessagesWrite), s.handleAttachmentCreate},

		// Integrations: app installations, slash commands, event subscriptions, hooks, connected
		// accounts, audit log.
		{"POST", "/api/workspaces/{workspace_id}/app-installations", human, s.handleAppInstallationCreate},
		{"GET", "/api/workspaces/{workspace_id}/app-installations", human, s.handleAppInstallationList},
		{"POST", "/api/app-installations/{installation_id}/revoke", human, s.handleAppInstallationRevoke},
		{"POST", "/api/workspaces/{workspace_id}/slash-commands", human, s.handleSlashCommandCreate},
		{"GET", "/api/workspaces/{workspace_id}/slash-commands", human, s.handleSlashCommandList},
		{"POST", "/api/slash-commands/{command_id}/revoke", human, s.handleSlashCommandRevoke},
		{"POST", "/api/slash-commands/{command_id}/rotate-secret", human, s.handleSlashCommandRotateSecret},
		{"POST", "/api/hooks/slash/{channel_id}", member(persist.ScopeMessagesWrite), s.handleSlashHook},
		{"POST", "/api/hooks/mattermost/{channel_id}", member(persist.ScopeMessagesWrite), s.handleMattermostHook},
		{"POST", "/api/workspaces/{workspace_id}/event-subscriptions", human, s.handleEventSubscriptionCreate},
		{"GET", "/api/workspaces/{workspace_id}/event-subscriptions", human, s.handleEventSubscriptionList},
		{"POST", "/api/event-subscriptions/{subscription_id}/revoke", human, s.handleEventSubscriptionRevoke},
		{"POST", "/api/event-subscriptions/{subscription_id}/rotate-secret", human, s.handleEventSubscriptionRotateSecret},
		{"GET", "/api/event-subscriptions/{subscription_id}/deliveries", human, s.handleEventDeliveryList},
		{"GET", "/api/event-types", authenticated, s.handleEventTypes},
		{"POST", "/api/workspaces/{workspace_id}/connected-accounts", human, s.handleConnectedAccountCreate},
		{"GET", "/api/workspaces/{workspace_id}/connected-accounts", human, s.handleConnectedAccountList},
		{"POST", "/api/connected-accounts/{account_id}/revoke", human, s.handleConnectedAccountRevoke},
		{"GET", "/api/workspaces/{workspace_id}/audit-log", human, s.handleAuditLogList},

		// Sign-in: passwords, identity proxy, GitHub OAuth, OIDC.
		{"POST", "/api/auth/password/login", public, s.handlePasswordLogin},
		{"POST", "/api/auth/password/change", human, s.handlePasswordChange},
		{"GET", "/api/auth/github/start", public, s.handleGitHubStart},
		{"GET", "/api/auth/github/callback", public, s.handleGitHubCallback},
		{"GET", "/api/auth/github/desktop/start", public, s.handleGitHubDesktopStart},
		{"POST", "/api/auth/github/desktop/consume", public, s.handleGitHubDesktopConsume},
		{"GET", "/api/auth/oidc/start", public, s.handleOIDCStart},
		{"GET", "/api/auth/oidc/callback", public, s.handleOIDCCallback},

		// Web push.
		{"GET", "/api/me/push", human, s.handlePushStatus},
		{"PUT", "/api/me/push/subscriptions", human, s.handlePushSubscribe},
		{"DELETE", "/api/me/push/subscriptions", human, s.handlePushUnsubscribe},
		{"GET", "/api/channels/{channel_id}/notification-preference", human, s.handleNotificationPreferenceGet},
		{"PUT", "/api/channels/{channel_id}/notification-preference", human, s.handleNotificationPreferenceSet},
	}
}

type route struct {
	method  string
	pattern string
	access  access
	handler http.HandlerFunc
}

func (s *Server) buildRouter() chi.Router {
	r := chi.NewRouter()
	r.Use(correlate, s.guardStalls, s.observe, s.recoverPanics, s.cors)
	r.NotFound(s.unrouted)
	r.MethodNotAllowed(func(w http.ResponseWriter, r *http.Request) {
		s.writeError(w, r, persist.Errorf(persist.CodeMethodNotAllowed, "%s is not allowed on this route", r.Method))
	})
	for _, rt := range s.routeTable() {
		r.Method(rt.method, rt.pattern, s.enforce(rt.access, rt.handler))
	}
	return r
}

// unrouted sends every path outside /api to the web client, which routes by path itself;
// unknown /api routes get the JSON 404.
func (s *Server) unrouted(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/api" && !strings.HasPrefix(r.URL.Path, "/api/") {
		s.web.ServeHTTP(w, r)
		return
	}
	s.notFound(w, r)
}

func (s *Server) notFound(w http.ResponseWriter, r *http.Request) {
	s.writeError(w, r, persist.Errorf(persist.CodeRouteNotFound, "no route matches %s %s", r.Method, r.URL.Path))
}
