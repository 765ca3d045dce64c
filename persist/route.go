package persist

import (
	"context"
	"strings"
)

// Route target types.
const (
	RouteChannel = "channel"
	RouteDirect  = "direct"
	RouteThread  = "thread"
)

// RouteTarget is a resolved pair of route ids: the canonical internal ids of the workspace and
// of the channel, direct conversation or thread root it names, their public route ids, and the
// web path that shows it.
type RouteTarget struct {
	WorkspaceID          string `json:"workspace_id"`
	WorkspaceRouteID     string `json:"workspace_route_id"`
	TargetType           string `json:"target_type"`
	TargetID             string `json:"target_id"`
	TargetRouteID        string `json:"target_route_id"`
	ParentType           string `json:"parent_type,omitempty"`
	ParentID             string `json:"parent_id,omitempty"`
	ParentRouteID        string `json:"parent_route_id,omitempty"`
	CanonicalPath        string `json:"canonical_path"`
	ChannelID            string `json:"channel_id,omitempty"`
	DirectConversationID string `json:"direct_conversation_id,omitempty"`
	MessageID            string `json:"message_id,omitempty"`
}

// RouteResolve resolves a workspace reference (`T…` or `wsp_…`) and a target reference (`C…` or
// `chn_…`, `D…` or `dm_…`, `M…` or `msg_…`) inside it, after the permission check: the actor
// must belong to the workspace and be able to read the target (a guest only the guest channel,
// a direct conversation only its members). Anything missing or out of reach is the same 404,
// so the answer never tells whether a hidden target exists. Codes: not_found.
func (tx *Tx) RouteResolve(ctx context.Context, actor Actor, workspaceRef, targetRef string) (RouteTarget, error) {
	var rt RouteTarget
	if err := tx.queryRow(ctx, `SELECT id, route_id FROM workspaces WHERE `+refColumn(workspaceRef, PrefixWorkspace)+` = $1`,
		workspaceRef).Scan(&rt.WorkspaceID, &rt.WorkspaceRouteID); err != nil {
		return RouteTarget{}, hideRoute(notFoundAs(err, "route"))
	}
	if _, err := tx.requireMemberToRead(ctx, rt.WorkspaceID, actor); err != nil {
		return RouteTarget{}, hideRoute(err)
	}
	var err error
	switch {
	case strings.HasPrefix(targetRef, "C") || strings.HasPrefix(targetRef, PrefixChannel):
		err = tx.routeChannel(ctx, actor, &rt, targetRef)
	case strings.HasPrefix(targetRef, "D") || strings.HasPrefix(targetRef, PrefixDM):
		err = tx.routeDirect(ctx, actor, &rt, targetRef)
	case strings.HasPrefix(targetRef, "M") || strings.HasPrefix(targetRef, PrefixMessage):
		err = tx.routeThread(ctx, actor, &rt, targetRef)
	default:
		err = NotFound("route")
	}
	if err != nil {
		return RouteTarget{}, hideRoute(err)
	}
	rt.CanonicalPath = "/" + rt.WorkspaceRouteID + "/" + rt.TargetRouteID
	return rt, nil
}

// refColumn is the column a reference is looked up by: id for an internal id (prefix), route_id
// for a public route id.
func refColumn(ref, prefix string) string {
	if strings.HasPrefix(ref, prefix) {
		return "id"
	}
	return "route_id"
}

// hideRoute turns every refusal into the one 404 of the route resolver; other errors pass.
func hideRoute(err error) error {
	if e, ok := ErrorOf(err); ok && (e.Code == CodeNotFound || e.Code == CodeForbidden) {
		return NotFound("route")
	}
	return err
}

func (tx *Tx) routeChannel(ctx context.Context, actor Actor, rt *RouteTarget, ref string) error {
	var id string
	if err := tx.queryRow(ctx, `SELECT id FROM channels WHERE workspace_id = $1 AND `+refColumn(ref, PrefixChannel)+` = $2`,
		rt.WorkspaceID, ref).Scan(&id); err != nil {
		return notFoundAs(err, "route")
	}
	c, _, err := tx.ChannelForRead(ctx, actor, id)
	if err != nil {
		return err
	}
	rt.TargetType, rt.TargetID, rt.TargetRouteID, rt.ChannelID = RouteChannel, c.ID, c.RouteID, c.ID
	return nil
}

func (tx *Tx) routeDirect(ctx context.Context, actor Actor, rt *RouteTarget, ref string) error {
	var id, routeID string
	if err := tx.queryRow(ctx, `SELECT d.id, d.route_id FROM dms d
		JOIN dm_members dm ON dm.workspace_id = d.workspace_id AND dm.dm_id = d.id AND dm.user_id = $3
		WHERE d.workspace_id = $1 AND d.`+refColumn(ref, PrefixDM)+` = $2`,
		rt.WorkspaceID, ref, actor.UserID).Scan(&id, &routeID); err != nil {
		return notFoundAs(err, "route")
	}
	rt.TargetType, rt.TargetID, rt.TargetRouteID, rt.DirectConversationID = RouteDirect, id, routeID, id
	return nil
}

// routeThread resolves a thread root message (`M…` or `msg_…`; a reply is not a route) after
// the read check of its channel or direct conversation, which becomes the parent.
func (tx *Tx) routeThread(ctx context.Context, actor Actor, rt *RouteTarget, ref string) error {
	var id string
	if err := tx.queryRow(ctx, `SELECT id FROM messages WHERE workspace_id = $1 AND `+refColumn(ref, PrefixMessage)+` = $2
		AND parent_message_id IS NULL`, rt.WorkspaceID, ref).Scan(&id); err != nil {
		return notFoundAs(err, "route")
	}
	m, _, err := tx.messageFor(ctx, actor, id, accessRead, "")
	if err != nil {
		return err
	}
	rt.TargetType, rt.TargetID, rt.TargetRouteID, rt.MessageID = RouteThread, m.ID, m.RouteID, m.ID
	rt.ChannelID, rt.DirectConversationID = m.ChannelID, m.DirectConversationID
	rt.ParentType, rt.ParentID = RouteChannel, m.ChannelID
	parent := `SELECT route_id FROM channels WHERE workspace_id = $1 AND id = $2`
	if m.DirectConversationID != "" {
		rt.ParentType, rt.ParentID = RouteDirect, m.DirectConversationID
		parent = `SELECT route_id FROM dms WHERE workspace_id = $1 AND id = $2`
	}
	return tx.queryRow(ctx, parent, rt.WorkspaceID, rt.ParentID).Scan(&rt.ParentRouteID)
}
