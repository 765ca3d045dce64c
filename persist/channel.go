package persist

import (
	"context"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// Channel is a named conversation of a workspace.
type Channel struct {
	ID              string     `json:"id"`
	RouteID         string     `json:"route_id"`
	WorkspaceID     string     `json:"workspace_id"`
	Name            string     `json:"name"`
	DisplayTitle    string     `json:"display_title,omitempty"`
	Kind            string     `json:"kind"`
	Archived        bool       `json:"archived"`
	ArchivedAt      *time.Time `json:"archived_at,omitempty"`
	ExternalManaged bool       `json:"external_managed"`
	ExternalRef     string     `json:"external_ref,omitempty"`
	ExternalURL     string     `json:"external_url,omitempty"`
	SidebarSection  string     `json:"sidebar_section,omitempty"`
	CreatedBy       string     `json:"created_by,omitempty"`
	CreatedAt       time.Time  `json:"created_at"`
	UpdatedAt       time.Time  `json:"updated_at"`
	LastSeq         int64      `json:"last_seq"`
}

const channelColumns = `id, route_id, workspace_id, name, coalesce(display_title, ''), kind, archived_at,
	external_managed, coalesce(external_ref, ''), coalesce(external_url, ''), coalesce(sidebar_section, ''),
	coalesce(created_by, ''), created_at, updated_at, last_seq`

func scanChannel(row pgx.Row) (Channel, error) {
	var c Channel
	err := row.Scan(&c.ID, &c.RouteID, &c.WorkspaceID, &c.Name, &c.DisplayTitle, &c.Kind, &c.ArchivedAt,
		&c.ExternalManaged, &c.ExternalRef, &c.ExternalURL, &c.SidebarSection, &c.CreatedBy, &c.CreatedAt,
		&c.UpdatedAt, &c.LastSeq)
	c.Archived = c.ArchivedAt != nil
	return c, err
}

// ChannelCreateParams are the fields of a new channel.
type ChannelCreateParams struct {
	Name string
}

// ChannelCreate creates a channel and appends channel.created. The actor must be a member who is
// not a guest. Codes: invalid_request, not_found (workspace), forbidden, conflict (name taken).
func (tx *Tx) ChannelCreate(ctx context.Context, actor Actor, workspaceID string, p ChannelCreateParams) (Channel, Event, error) {
	m, err := tx.requireMember(ctx, workspaceID, actor)
	if err != nil {
		return Channel{}, Event{}, err
	}
	if m.Role == RoleGuest {
		return Channel{}, Event{}, Forbidden("guests cannot create channels")
	}
	name := Slugify(strings.TrimPrefix(strings.TrimSpace(p.Name), "#"))
	if name == "" {
		return Channel{}, Event{}, Invalid("name must contain a letter or digit")
	}
	id := NewID(PrefixChannel, tx.now)
	c, err := scanChannel(tx.queryRow(ctx, `
		INSERT INTO channels (id, route_id, workspace_id, name, created_by, created_at, updated_at)
		VALUES ($1, $2, $3, $4, $5, $6, $6) RETURNING `+channelColumns,
		id, RouteID("C", id), workspaceID, name, actor.UserID, tx.now))
	if err != nil {
		return Channel{}, Event{}, err
	}
	ev, err := tx.EventAppend(ctx, EventInput{WorkspaceID: workspaceID, Type: "channel.created",
		ChannelID: c.ID, ActorID: actor.UserID, Payload: map[string]any{"channel": c}})
	return c, ev, err
}
