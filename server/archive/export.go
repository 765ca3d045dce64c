package archive

import (
	"archive/zip"
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/natterchat/natter/persist"
	"github.com/natterchat/natter/server/blob"
)

// Format and Version identify an archive; Import refuses another format and a newer version.
const (
	Format  = "natter-workspace-export"
	Version = 1
)

// The archive's entries. Export writes them in this order; a reader opens them by name.
const (
	EntryWorkspace      = "workspace.json"
	EntryMembers        = "members.jsonl"
	EntryBots           = "bots.jsonl"
	EntryChannels       = "channels.jsonl"
	EntryChannelMembers = "channel_members.jsonl"
	EntryDMs            = "dms.jsonl"
	EntryMessages       = "messages.jsonl"
	EntryPins           = "pins.jsonl"
	EntryReceipts       = "read_receipts.jsonl"
	EntryUploads        = "uploads.jsonl"
	EntryUsers          = "users.jsonl"
	EntryManifest       = "manifest.json"
	// UploadPrefix names an upload's bytes: uploads/<upload_id>.
	UploadPrefix = "uploads/"
)

// Scopes of an export (Manifest.Scope).
const (
	ScopeOperator = "operator"
	ScopeOwner    = "owner"
)

// Manifest is the archive's manifest.json, written last (it counts what came before) and read
// first.
type Manifest struct {
	Format      string    `json:"format"`
	Version     int       `json:"version"`
	ExportedAt  time.Time `json:"exported_at"`
	Scope       string    `json:"scope"`
	ExportedBy  string    `json:"exported_by,omitempty"`
	WorkspaceID string    `json:"workspace_id"`
	// Counts are the lines of each .jsonl entry, "upload_bytes" the upload entries written and
	// "missing_uploads" the uploads whose object the upload store no longer had.
	Counts map[string]int64 `json:"counts"`
	// MissingUploads are uploads whose object the upload store no longer had: their metadata is
	// in uploads.jsonl, their bytes are not in the archive (at most the first 100 are named).
	MissingUploads []string `json:"missing_uploads,omitempty"`
}

// Options choose what Export writes.
type Options struct {
	Store *persist.Store
	// Blobs is the upload store the bytes are read from; nil writes metadata only.
	Blobs blob.Store
	// Scope is the workspace, and the person exporting (empty ViewerID: the operator).
	Scope persist.ArchiveScope
	// Actor is the person exporting, checked to be the workspace's owner before anything is
	// written; nil for the operator.
	Actor *persist.Actor
	// Started, when set, is called once the export is allowed and before its first byte, with
	// the workspace (the owner's download sets its headers there).
	Started func(persist.Workspace)
	// PageSize is the keyset page of every read; default 500.
	PageSize int
}

// maxMissingNamed bounds Manifest.MissingUploads.
const maxMissingNamed = 100

// Export writes the archive of o.Scope to w, reading one page at a time inside one snapshot of
// the database. Codes (before anything is written): not_found, forbidden (o.Actor is not the
// owner). An error after the first byte leaves w holding a broken archive (no central
// directory), which no reader accepts.
func Export(ctx context.Context, o Options, w io.Writer) (Manifest, error) {
	if o.PageSize <= 0 {
		o.PageSize = 500
	}
	x := &exporter{o: o, users: map[string]bool{}, m: Manifest{Format: Format, Version: Version,
		Scope: ScopeOperator, WorkspaceID: o.Scope.WorkspaceID, Counts: map[string]int64{}}}
	if o.Scope.ViewerID != "" {
		x.m.Scope, x.m.ExportedBy = ScopeOwner, o.Scope.ViewerID
	}
	err := o.Store.Snapshot(ctx, func(tx *persist.Tx) error {
		x.tx, x.m.ExportedAt = tx, tx.Now().UTC().Truncate(time.Second)
		if o.Actor != nil {
			if err := tx.ArchiveAuthorize(ctx, *o.Actor, o.Scope.WorkspaceID); err != nil {
				return err
			}
		}
		ws, err := tx.ArchiveWorkspace(ctx, o.Scope.WorkspaceID)
		if err != nil {
			return err
		}
		if o.Started != nil {
			o.Started(ws)
		}
		x.zw = zip.NewWriter(w)
		if err := x.run(ctx, ws); err != nil {
			return err
		}
		return x.zw.Close()
	})
	return x.m, err
}

// exporter is one run of Export.
type exporter struct {
	o     Options
	tx    *persist.Tx
	zw    *zip.Writer
	m     Manifest
	users map[string]bool // every user a line names: users.jsonl holds them, written last
}

func (x *exporter) run(ctx context.Context, ws persist.Workspace) error {
	x.see(ws.CreatedBy)
	steps := []func(context.Context) error{
		func(context.Context) error { return x.single(EntryWorkspace, workspaceLine(ws)) },
		x.members, x.bots, x.channels, x.channelMembers, x.dms, x.messages, x.pins, x.receipts, x.threadReads,
		x.uploads, x.uploadBytes, x.usersLines,
	}
	for _, step := range steps {
		if err := step(ctx); err != nil {
			return err
		}
	}
	return x.single(EntryManifest, x.m)
}

// WorkspaceLine is workspace.json: the workspace's own fields.
type WorkspaceLine struct {
	ID           string    `json:"id"`
	RouteID      string    `json:"route_id"`
	Name         string    `json:"name"`
	Slug         string    `json:"slug"`
	IconUploadID string    `json:"icon_upload_id,omitempty"`
	CreatedBy    string    `json:"created_by,omitempty"`
	CreatedAt    time.Time `json:"created_at"`
	UpdatedAt    time.Time `json:"updated_at"`
}

func workspaceLine(w persist.Workspace) WorkspaceLine {
	return WorkspaceLine{ID: w.ID, RouteID: w.RouteID, Name: w.Name, Slug: w.Slug, IconUploadID: w.IconUploadID,
		CreatedBy: w.CreatedBy, CreatedAt: w.CreatedAt.UTC(), UpdatedAt: w.UpdatedAt.UTC()}
}

func (x *exporter) see(ids ...string) {
	for _, id := range ids {
		if id != "" {
			x.users[id] = true
		}
	}
}

// entry opens a compressed entry dated like the export, so two exports of the same data differ
// only in their manifest's exported_at and these dates.
func (x *exporter) entry(name string, method uint16) (io.Writer, error) {
	return x.zw.CreateHeader(&zip.FileHeader{Name: name, Method: method, Modified: x.m.ExportedAt})
}

func (x *exporter) single(name string, v any) error {
	w, err := x.entry(name, zip.Deflate)
	if err != nil {
		return err
	}
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// lines is an open .jsonl entry.
type lines struct {
	name string
	bw   *bufio.Writer
	enc  *json.Encoder
	x    *exporter
}

func (x *exporter) lines(name string) (*lines, error) {
	w, err := x.entry(name, zip.Deflate)
	if err != nil {
		return nil, err
	}
	bw := bufio.NewWriterSize(w, 64<<10)
	enc := json.NewEncoder(bw)
	enc.SetEscapeHTML(false)
	x.m.Counts[name] = 0
	return &lines{name: name, bw: bw, enc: enc, x: x}, nil
}

func (l *lines) put(v any) error {
	l.x.m.Counts[l.name]++
	return l.enc.Encode(v)
}

func (l *lines) close() error { return l.bw.Flush() }

// pages calls page with the key after which to read, until it returns an empty next key.
func pages(ctx context.Context, page func(after string) (next string, err error)) error {
	after := ""
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		next, err := page(after)
		if err != nil || next == "" {
			return err
		}
		after = next
	}
}

func (x *exporter) members(ctx context.Context) error {
	l, err := x.lines(EntryMembers)
	if err != nil {
		return err
	}
	var after int64
	for {
		list, last, err := x.tx.ArchiveMembers(ctx, x.o.Scope.WorkspaceID, after, x.o.PageSize)
		if err != nil {
			return err
		}
		for _, m := range list {
			x.see(m.UserID, m.ModerationBy)
			if err := l.put(memberLine(m)); err != nil {
				return err
			}
		}
		if len(list) < x.o.PageSize {
			return l.close()
		}
		after = last
	}
}

// MemberLine is a line of members.jsonl, in join order.
type MemberLine struct {
	UserID         string     `json:"user_id"`
	Role           string     `json:"role"`
	JoinedAt       time.Time  `json:"joined_at"`
	TimeoutUntil   *time.Time `json:"timeout_until,omitempty"`
	BlockedAt      *time.Time `json:"blocked_at,omitempty"`
	ModerationNote string     `json:"moderation_note,omitempty"`
	ModerationBy   string     `json:"moderation_by,omitempty"`
	ModerationAt   *time.Time `json:"moderation_at,omitempty"`
}

func memberLine(m persist.Member) MemberLine {
	return MemberLine{UserID: m.UserID, Role: m.Role, JoinedAt: m.JoinedAt, TimeoutUntil: m.TimeoutUntil,
		BlockedAt: m.BlockedAt, ModerationNote: m.ModerationNote, ModerationBy: m.ModerationBy, ModerationAt: m.ModerationAt}
}

func (x *exporter) bots(ctx context.Context) error {
	l, err := x.lines(EntryBots)
	if err != nil {
		return err
	}
	if err := pages(ctx, func(after string) (string, error) {
		list, err := x.tx.ArchiveBots(ctx, x.o.Scope.WorkspaceID, after, x.o.PageSize)
		for _, b := range list {
			x.see(b.UserID, b.CreatedBy)
			if err := l.put(b); err != nil {
				return "", err
			}
		}
		return nextKey(list, err, x.o.PageSize, func(b persist.ArchiveBot) string { return b.UserID })
	}); err != nil {
		return err
	}
	return l.close()
}

// nextKey is the key after a page: its last item's, or "" when the page was the last.
func nextKey[T any](list []T, err error, size int, key func(T) string) (string, error) {
	if err != nil || len(list) < size {
		return "", err
	}
	return key(list[len(list)-1]), nil
}

// eachChannel calls fn for every channel in scope, a page at a time.
func (x *exporter) eachChannel(ctx context.Context, fn func(persist.Channel) error) error {
	return pages(ctx, func(after string) (string, error) {
		list, err := x.tx.ArchiveChannels(ctx, x.o.Scope, after, x.o.PageSize)
		for _, c := range list {
			if err := fn(c); err != nil {
				return "", err
			}
		}
		return nextKey(list, err, x.o.PageSize, func(c persist.Channel) string { return c.ID })
	})
}

// eachDM calls fn for every direct conversation in scope, a page at a time.
func (x *exporter) eachDM(ctx context.Context, fn func(persist.ArchiveDM) error) error {
	return pages(ctx, func(after string) (string, error) {
		list, err := x.tx.ArchiveDMs(ctx, x.o.Scope, after, x.o.PageSize)
		for _, d := range list {
			if err := fn(d); err != nil {
				return "", err
			}
		}
		return nextKey(list, err, x.o.PageSize, func(d persist.ArchiveDM) string { return d.ID })
	})
}

func (x *exporter) channels(ctx context.Context) error {
	l, err := x.lines(EntryChannels)
	if err != nil {
		return err
	}
	if err := x.eachChannel(ctx, func(c persist.Channel) error {
		x.see(c.CreatedBy)
		return l.put(channelLine(c))
	}); err != nil {
		return err
	}
	return l.close()
}

// ChannelLine is a line of channels.jsonl.
type ChannelLine struct {
	ID              string     `json:"id"`
	RouteID         string     `json:"route_id"`
	Name            string     `json:"name"`
	DisplayTitle    string     `json:"display_title,omitempty"`
	Kind            string     `json:"kind"`
	Visibility      string     `json:"visibility"`
	ArchivedAt      *time.Time `json:"archived_at,omitempty"`
	ExternalManaged bool       `json:"external_managed,omitempty"`
	ExternalRef     string     `json:"external_ref,omitempty"`
	ExternalURL     string     `json:"external_url,omitempty"`
	SidebarSection  string     `json:"sidebar_section,omitempty"`
	CreatedBy       string     `json:"created_by,omitempty"`
	CreatedAt       time.Time  `json:"created_at"`
	UpdatedAt       time.Time  `json:"updated_at"`
	LastSeq         int64      `json:"last_seq"`
}

func channelLine(c persist.Channel) ChannelLine {
	return ChannelLine{ID: c.ID, RouteID: c.RouteID, Name: c.Name, DisplayTitle: c.DisplayTitle, Kind: c.Kind,
		Visibility: c.Visibility, ArchivedAt: c.ArchivedAt, ExternalManaged: c.ExternalManaged, ExternalRef: c.ExternalRef,
		ExternalURL: c.ExternalURL, SidebarSection: c.SidebarSection, CreatedBy: c.CreatedBy, CreatedAt: c.CreatedAt,
		UpdatedAt: c.UpdatedAt, LastSeq: c.LastSeq}
}

func (x *exporter) channelMembers(ctx context.Context) error {
	l, err := x.lines(EntryChannelMembers)
	if err != nil {
		return err
	}
	if err := x.eachChannel(ctx, func(c persist.Channel) error {
		if c.Visibility != persist.VisibilityPrivate {
			return nil
		}
		return pages(ctx, func(after string) (string, error) {
			list, err := x.tx.ArchiveChannelMembers(ctx, c.ID, after, x.o.PageSize)
			for _, m := range list {
				x.see(m.UserID, m.AddedBy)
				if err := l.put(m); err != nil {
					return "", err
				}
			}
			return nextKey(list, err, x.o.PageSize, func(m persist.ArchiveChannelMember) string { return m.UserID })
		})
	}); err != nil {
		return err
	}
	return l.close()
}

func (x *exporter) dms(ctx context.Context) error {
	l, err := x.lines(EntryDMs)
	if err != nil {
		return err
	}
	if err := x.eachDM(ctx, func(d persist.ArchiveDM) error {
		x.see(d.CreatedBy)
		for _, m := range d.Members {
			x.see(m.UserID)
		}
		return l.put(d)
	}); err != nil {
		return err
	}
	return l.close()
}

func (x *exporter) pins(ctx context.Context) error {
	l, err := x.lines(EntryPins)
	if err != nil {
		return err
	}
	if err := x.eachChannel(ctx, func(c persist.Channel) error {
		list, err := x.tx.ArchivePins(ctx, c.ID)
		for _, p := range list {
			x.see(p.PinnedBy)
			if err := l.put(PinLine{ChannelID: p.ChannelID, MessageID: p.MessageID, PinnedBy: p.PinnedBy, PinnedAt: p.PinnedAt}); err != nil {
				return err
			}
		}
		return err
	}); err != nil {
		return err
	}
	return l.close()
}

// PinLine is a line of pins.jsonl.
type PinLine struct {
	ChannelID string    `json:"channel_id"`
	MessageID string    `json:"message_id"`
	PinnedBy  string    `json:"pinned_by"`
	PinnedAt  time.Time `json:"pinned_at"`
}

func (x *exporter) receipts(ctx context.Context) error {
	l, err := x.lines(EntryReceipts)
	if err != nil {
		return err
	}
	// A person's export holds their own read state only: nobody else's is theirs to read.
	each := func(scopeID string) error {
		return pages(ctx, func(after string) (string, error) {
			list, err := x.tx.ArchiveReceipts(ctx, scopeID, after, x.o.PageSize)
			for _, r := range list {
				if x.o.Scope.ViewerID != "" && r.UserID != x.o.Scope.ViewerID {
					continue
				}
				x.see(r.UserID)
				if err := l.put(r); err != nil {
					return "", err
				}
			}
			return nextKey(list, err, x.o.PageSize, func(r persist.ArchiveReceipt) string { return r.UserID })
		})
	}
	if err := x.eachChannel(ctx, func(c persist.Channel) error { return each(c.ID) }); err != nil {
		return err
	}
	if err := x.eachDM(ctx, func(d persist.ArchiveDM) error { return each(d.ID) }); err != nil {
		return err
	}
	return l.close()
}

func (x *exporter) uploads(ctx context.Context) error {
	l, err := x.lines(EntryUploads)
	if err != nil {
		return err
	}
	if err := x.eachUpload(ctx, func(u persist.ArchiveUpload) error {
		x.see(u.OwnerID)
		return l.put(u)
	}); err != nil {
		return err
	}
	return l.close()
}

func (x *exporter) eachUpload(ctx context.Context, fn func(persist.ArchiveUpload) error) error {
	return pages(ctx, func(after string) (string, error) {
		list, err := x.tx.ArchiveUploads(ctx, x.o.Scope, after, x.o.PageSize)
		for _, u := range list {
			if err := fn(u); err != nil {
				return "", err
			}
		}
		return nextKey(list, err, x.o.PageSize, func(u persist.ArchiveUpload) string { return u.ID })
	})
}

// uploadBytes writes each upload's bytes, stored as they are (files are mostly compressed
// already), straight from the upload store.
func (x *exporter) uploadBytes(ctx context.Context) error {
	x.m.Counts["upload_bytes"], x.m.Counts["missing_uploads"] = 0, 0
	if x.o.Blobs == nil {
		return nil
	}
	return x.eachUpload(ctx, func(u persist.ArchiveUpload) error {
		obj, err := x.o.Blobs.Open(ctx, u.StorageKey)
		if errors.Is(err, blob.ErrNotFound) {
			x.m.Counts["missing_uploads"]++
			if len(x.m.MissingUploads) < maxMissingNamed {
				x.m.MissingUploads = append(x.m.MissingUploads, u.ID)
			}
			return nil
		}
		if err != nil {
			return fmt.Errorf("upload %s: %w", u.ID, err)
		}
		defer obj.Close()
		w, err := x.entry(UploadPrefix+u.ID, zip.Store)
		if err != nil {
			return err
		}
		if _, err := io.Copy(w, obj); err != nil {
			return fmt.Errorf("upload %s: %w", u.ID, err)
		}
		x.m.Counts["upload_bytes"]++
		return nil
	})
}

// usersLines writes every user the other entries named, and the owners of the user bots among
// them, a page of ids at a time.
func (x *exporter) usersLines(ctx context.Context) error {
	l, err := x.lines(EntryUsers)
	if err != nil {
		return err
	}
	done := map[string]bool{}
	for {
		var ids []string
		for id := range x.users {
			if !done[id] {
				ids = append(ids, id)
			}
		}
		if len(ids) == 0 {
			return l.close()
		}
		slices.Sort(ids)
		for chunk := range slices.Chunk(ids, x.o.PageSize) {
			list, err := x.tx.ArchiveUsers(ctx, x.o.Scope, chunk)
			if err != nil {
				return err
			}
			for _, id := range chunk {
				done[id] = true
			}
			for _, u := range list {
				x.see(u.OwnerUserID)
				if err := l.put(u); err != nil {
					return err
				}
			}
		}
	}
}
