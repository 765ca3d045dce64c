package persist

import (
	"context"
	"errors"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// PrefixUnsubscribeToken prefixes one-click unsubscribe tokens.
const PrefixUnsubscribeToken = "eun_"

// EmailDigest is what one missed-activity email says, read when it is sent.
type EmailDigest struct {
	To            string
	Name          string // the recipient's display name
	WorkspaceName string
	// Place is "#<channel>" for a channel, empty for a direct conversation.
	Place string
	// Thread is true for the replies of one thread.
	Thread bool
	// Path is the conversation's route in the client: /<workspace route id>/<C… or D…>, or
	// /<workspace route id>/<M…> for a thread.
	Path string
	// Messages are those still unread and readable, oldest first.
	Messages []EmailItem
	// Unsubscribe is the raw one-click unsubscribe token of this email.
	Unsubscribe string
}

// EmailItem is one message of a digest, as it reads now.
type EmailItem struct {
	ID        string
	Author    string
	Body      string
	CreatedAt time.Time
}

// Why a claimed batch sends nothing (EmailDigestBuild).
const (
	EmailDropOff     = "email_off"    // the person turned email off, chose "off", or has no address
	EmailDropNothing = "nothing_left" // every message was read, deleted, or is no longer theirs to read
)

// EmailDigestBuild re-checks a claimed batch immediately before it is sent and returns the
// email, or the reason (an EmailDrop… constant) to send nothing: the person still wants email,
// and each message is kept only while it is not deleted, they can still read it (membership,
// private channels, guests), have not muted its channel, it still selects them (an edit that
// removed the mention drops it), and they have not read it. Read means: for a root, their read
// mark of the conversation reached it, or they posted there after it; for a reply, they posted
// in the thread after it, or moved their read mark of the conversation after it arrived. The
// digest's unsubscribe token is minted and its hash kept with the batch.
func (tx *Tx) EmailDigestBuild(ctx context.Context, b EmailBatch) (EmailDigest, string, error) {
	var d EmailDigest
	var on bool
	var delay string
	err := tx.queryRow(ctx, `SELECT coalesce(u.email, ''), u.display_name, u.email_notifications, u.email_delay
		FROM users u WHERE u.id = $1 AND u.deleted_at IS NULL`, b.UserID).Scan(&d.To, &d.Name, &on, &delay)
	if errors.Is(err, pgx.ErrNoRows) {
		return d, EmailDropOff, nil
	}
	if err != nil {
		return d, "", err
	}
	if !on || delay == EmailDelayOff || d.To == "" {
		return d, EmailDropOff, nil
	}
	rows, err := tx.query(ctx, `SELECT message_id FROM email_batch_messages WHERE batch_id = $1`, b.ID)
	if err != nil {
		return d, "", err
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return d, "", err
	}
	var lastReadSeq int64
	var lastReadAt *time.Time
	err = tx.queryRow(ctx, `SELECT last_read_seq, last_read_at FROM read_receipts WHERE scope_id = $1 AND user_id = $2`,
		b.PlaceID, b.UserID).Scan(&lastReadSeq, &lastReadAt)
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return d, "", err
	}
	var first Message
	for _, id := range ids {
		m, err := tx.messageLoad(ctx, id, "")
		if e, ok := ErrorOf(err); ok && e.Code == CodeNotFound {
			continue
		}
		if err != nil {
			return d, "", err
		}
		keep, err := tx.emailStillUnread(ctx, b.UserID, m, lastReadSeq, lastReadAt)
		if err != nil {
			return d, "", err
		}
		if keep {
			d.Messages = append(d.Messages, EmailItem{ID: m.ID, Author: m.Author.DisplayName, Body: m.Body, CreatedAt: m.CreatedAt})
			if first.ID == "" || m.CreatedAt.Before(first.CreatedAt) {
				first = m
			}
		}
	}
	if len(d.Messages) == 0 {
		return d, EmailDropNothing, nil
	}
	sortItems(d.Messages)
	if err := tx.emailPlace(ctx, &d, first); err != nil {
		return d, "", err
	}
	raw, hash := NewSecret(PrefixUnsubscribeToken)
	if _, err := tx.exec(ctx, `UPDATE email_batches SET unsubscribe_hash = $2 WHERE id = $1`, b.ID, hash); err != nil {
		return d, "", err
	}
	d.Unsubscribe = raw
	return d, "", nil
}

// emailStillUnread applies EmailDigestBuild's rules to one message.
func (tx *Tx) emailStillUnread(ctx context.Context, userID string, m Message, lastReadSeq int64, lastReadAt *time.Time) (bool, error) {
	if m.DeletedAt != nil {
		return false, nil
	}
	readers, err := tx.emailReaders(ctx, m, userID)
	if err != nil || len(readers) == 0 {
		return false, err
	}
	followers, err := tx.threadFollowers(ctx, m)
	if err != nil || !emailSelects(m, readers[0].handle, followers[userID]) {
		return false, err
	}
	if m.IsRoot() && m.ChannelSeq != nil && *m.ChannelSeq <= lastReadSeq {
		return false, nil
	}
	if !m.IsRoot() && lastReadAt != nil && !lastReadAt.Before(m.CreatedAt) {
		return false, nil
	}
	// Posting after it, in the same conversation (the thread, for a reply), is having read it.
	var answered bool
	err = tx.queryRow(ctx, `SELECT EXISTS (SELECT 1 FROM messages WHERE workspace_id = $1 AND author_id = $2
		AND created_at > $3 AND (CASE WHEN $4 THEN (channel_id = $5 OR dm_id = $5) ELSE thread_root_id = $6 END))`,
		m.WorkspaceID, userID, m.CreatedAt, m.IsRoot(), m.ChannelID+m.DirectConversationID, m.ThreadRootID).Scan(&answered)
	return !answered, err
}

// emailPlace fills the digest's workspace, place and link from its first message.
func (tx *Tx) emailPlace(ctx context.Context, d *EmailDigest, m Message) error {
	var wsRoute, placeRoute, channel, threadRoute string
	err := tx.queryRow(ctx, `SELECT w.name, w.route_id,
			coalesce((SELECT route_id FROM channels WHERE id = $2), (SELECT route_id FROM dms WHERE id = $2), ''),
			coalesce((SELECT name FROM channels WHERE id = $2), ''),
			coalesce((SELECT route_id FROM messages WHERE workspace_id = $1 AND id = $3), '')
		FROM workspaces w WHERE w.id = $1`, m.WorkspaceID, m.ChannelID+m.DirectConversationID, m.ThreadRootID).
		Scan(&d.WorkspaceName, &wsRoute, &placeRoute, &channel, &threadRoute)
	if err != nil {
		return notFoundAs(err, "workspace")
	}
	if channel != "" {
		d.Place = "#" + channel
	}
	d.Path = "/" + wsRoute + "/" + placeRoute
	if !m.IsRoot() && threadRoute != "" {
		d.Thread = true
		d.Path = "/" + wsRoute + "/" + threadRoute
	}
	return nil
}

func sortItems(items []EmailItem) {
	slices.SortFunc(items, func(a, b EmailItem) int {
		if c := a.CreatedAt.Compare(b.CreatedAt); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
}
