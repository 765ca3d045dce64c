package archive

import (
	"archive/zip"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"

	"github.com/natterchat/natter/persist"
	"github.com/natterchat/natter/server/blob"
)

// ImportOptions say where Import writes.
type ImportOptions struct {
	Store *persist.Store
	// Blobs is the upload store the files go to; nil leaves them out (each reported).
	Blobs blob.Store
	// Workspace, when set, is a workspace an earlier run of this archive created (id, route id
	// or slug): the import resumes into it, writing only what is missing. Empty creates the
	// workspace.
	Workspace string
	// Slug, when set, is the new workspace's slug instead of the archive's (to import an
	// archive beside the workspace it came from).
	Slug string
	// Logger receives progress at info level; nil is silent.
	Logger *slog.Logger
}

// importer is one run of Import.
type importer struct {
	o      ImportOptions
	zr     *zip.Reader
	h      persist.History
	report Report
	// The ids the source's people, channels, conversations and uploads became: small next to
	// the history, so they are kept; messages are looked up in the store (with a bounded cache
	// of roots, which the archive puts just before their replies).
	people, channels, dms, uploads map[string]string
	roots                          map[string]string
	createdBots                    map[string]bool
}

// rootCache bounds importer.roots.
const rootCache = 50000

// Import reads the archive at path into the deployment of o.Store, through the store's history
// writer (persist.History…): new ids (the source's are kept in import_records, keyed by
// "natter:<source workspace id>", so a run repeated with o.Workspace writes nothing twice), no
// event but channel.created. It refuses an archive of another format or a newer version before
// writing anything; a record that cannot be written is skipped and reported.
func Import(ctx context.Context, path string, o ImportOptions) (Report, error) {
	zrc, err := zip.OpenReader(path)
	if err != nil {
		return Report{}, fmt.Errorf("open the archive: %w", err)
	}
	defer zrc.Close()
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	im := &importer{o: o, zr: &zrc.Reader, report: Report{Counts: map[string]*Count{}},
		people: map[string]string{}, channels: map[string]string{}, dms: map[string]string{},
		uploads: map[string]string{}, roots: map[string]string{}, createdBots: map[string]bool{}}
	var m Manifest
	if err := readJSON(im.zr, EntryManifest, &m); err != nil {
		return Report{}, fmt.Errorf("not a Natter export: %w", err)
	}
	if m.Format != Format {
		return Report{}, fmt.Errorf("not a Natter export: format %q", m.Format)
	}
	if m.Version < 1 || m.Version > Version {
		return Report{}, fmt.Errorf("export format version %d; this natter reads up to version %d", m.Version, Version)
	}
	var ws WorkspaceLine
	if err := readJSON(im.zr, EntryWorkspace, &ws); err != nil {
		return Report{}, err
	}
	if err := im.open(ctx, m, ws); err != nil {
		return Report{}, err
	}
	im.report.WorkspaceID, im.report.Source = im.h.WorkspaceID, im.h.Source
	steps := []struct {
		name string
		run  func(context.Context) error
	}{
		{EntryUsers, im.users}, {EntryUsers + " (bot owners)", im.botOwners}, {EntryMembers, im.members},
		{EntryBots, im.bots}, {EntryUploads, im.uploadFiles},
		{EntryChannels, im.channelsIn}, {EntryChannelMembers, im.channelMembersIn}, {EntryDMs, im.dmsIn},
		{EntryMessages, im.messagesIn}, {EntryPins, im.pinsIn}, {EntryMessages + " (details)", im.messageDetails},
		{EntryDMs + " (details)", im.dmDetails}, {EntryReceipts, im.receiptsIn}, {EntryThreadReads, im.threadReadsIn},
		{EntryWorkspace, func(ctx context.Context) error { return im.workspaceDetails(ctx, ws) }},
	}
	for _, s := range steps {
		im.o.Logger.Info("import", "step", s.name)
		if err := s.run(ctx); err != nil {
			return im.report, fmt.Errorf("%s: %w", s.name, err)
		}
	}
	return im.report, nil
}

// open creates the workspace with its owner, or finds the one an earlier run created.
func (im *importer) open(ctx context.Context, m Manifest, ws WorkspaceLine) error {
	source := "natter:" + m.WorkspaceID
	if im.o.Workspace != "" {
		h, err := persist.WithTxV(ctx, im.o.Store, func(tx *persist.Tx) (persist.History, error) {
			w, err := tx.WorkspaceGetByRef(ctx, im.o.Workspace)
			if err != nil {
				return persist.History{}, err
			}
			h, ok, err := tx.HistoryWorkspaceOf(ctx, w.ID, source, m.WorkspaceID)
			if err == nil && !ok {
				err = fmt.Errorf("workspace %s is not an import of this archive (workspace %s)", w.Slug, m.WorkspaceID)
			}
			return h, err
		})
		im.h = h
		return err
	}
	owner, err := im.ownerLine(ctx, ws)
	if err != nil {
		return err
	}
	h, err := persist.WithTxV(ctx, im.o.Store, func(tx *persist.Tx) (persist.History, error) {
		h, got, err := tx.HistoryWorkspaceCreate(ctx, source, persist.HistoryWorkspaceParams{SourceID: ws.ID,
			Name: ws.Name, Slug: cmp.Or(im.o.Slug, ws.Slug), CreatedAt: ws.CreatedAt, Owner: personOf(owner)})
		if err == nil && got.Created {
			err = tx.HistoryUserDetails(ctx, h, got.ID, detailsOf(owner, ""))
		}
		if err == nil {
			im.people[owner.ID] = got.ID
		}
		return h, err
	})
	if e, ok := persist.ErrorOf(err); ok && e.Code == persist.CodeConflict {
		return fmt.Errorf("a workspace with the slug %s exists already (to resume an import into it, pass its slug "+
			"as --workspace; to import beside it, choose another with --slug): %w", cmp.Or(im.o.Slug, ws.Slug), err)
	}
	im.h = h
	return err
}

// ownerLine finds the owner among the members and their profile among the users.
func (im *importer) ownerLine(ctx context.Context, ws WorkspaceLine) (persist.ArchiveUser, error) {
	ownerID := ""
	if err := eachLine(ctx, im.zr, EntryMembers, func(_ int, line []byte) error {
		var m MemberLine
		if json.Unmarshal(line, &m) == nil && m.Role == persist.RoleOwner {
			ownerID = m.UserID
		}
		return nil
	}); err != nil {
		return persist.ArchiveUser{}, err
	}
	if ownerID == "" {
		ownerID = ws.CreatedBy
	}
	var owner persist.ArchiveUser
	err := eachLine(ctx, im.zr, EntryUsers, func(_ int, line []byte) error {
		var u persist.ArchiveUser
		if json.Unmarshal(line, &u) == nil && u.ID == ownerID {
			owner = u
		}
		return nil
	})
	if err == nil && owner.ID == "" {
		err = fmt.Errorf("the archive names no owner of the workspace")
	}
	return owner, err
}

func personOf(u persist.ArchiveUser) persist.HistoryPersonParams {
	return persist.HistoryPersonParams{SourceID: u.ID, Kind: u.Kind, DisplayName: u.DisplayName, Handle: u.Handle,
		Email: u.Email, AvatarURL: u.AvatarURL, Deactivated: true}
}

func detailsOf(u persist.ArchiveUser, ownerID string) persist.HistoryUserDetails {
	return persist.HistoryUserDetails{OwnerUserID: ownerID, Handle: u.Handle, FormerHandle: u.FormerHandle,
		Email: u.Email, TimeZone: u.TimeZone, CreatedAt: u.CreatedAt, DeletedAt: u.DeletedAt}
}

// users imports every person and bot as the author they are: deactivated first (the history
// writer's way of adding someone who is no member), then given back their own state, live or
// deleted, as the source had it; members join in the next step, in join order.
func (im *importer) users(ctx context.Context) error {
	return im.batches(ctx, EntryUsers, func(tx *persist.Tx, _ int, line []byte) (func(), error) {
		var u persist.ArchiveUser
		if err := decode(line, &u); err != nil {
			return nil, err
		}
		got, err := tx.HistoryPerson(ctx, im.h, personOf(u))
		if err == nil && got.Created {
			err = tx.HistoryUserDetails(ctx, im.h, got.ID, detailsOf(u, ""))
		}
		return func() {
			im.people[u.ID] = got.ID
			im.report.count(persist.HistoryKindPerson, got)
			// Bots are never matched to accounts (they carry no address): every one is the
			// import's own, so a resumed run finishes their owners too.
			if u.Kind == persist.KindBot && u.OwnerUserID != "" {
				im.createdBots[u.ID] = true
			}
		}, err
	})
}

// botOwners gives the user bots the import created their owners, once every owner is there.
func (im *importer) botOwners(ctx context.Context) error {
	if len(im.createdBots) == 0 {
		return nil
	}
	return im.batches(ctx, EntryUsers, func(tx *persist.Tx, _ int, line []byte) (func(), error) {
		var u persist.ArchiveUser
		if decode(line, &u) != nil || !im.createdBots[u.ID] {
			return nil, nil // a malformed line was reported by the first pass
		}
		owner, ok := im.people[u.OwnerUserID]
		if !ok {
			return nil, bad("the owner %s of bot %s is not in the archive", u.OwnerUserID, u.ID)
		}
		return nil, tx.HistoryUserDetails(ctx, im.h, im.people[u.ID], detailsOf(u, owner))
	})
}

// person is the Natter id of a source user named by a line; an unknown one fails the line.
func (im *importer) person(id string) (string, error) {
	if id == "" {
		return "", nil
	}
	if got, ok := im.people[id]; ok {
		return got, nil
	}
	return "", bad("user %s is not in the archive", id)
}

func (im *importer) members(ctx context.Context) error {
	return im.batches(ctx, EntryMembers, func(tx *persist.Tx, _ int, line []byte) (func(), error) {
		var m MemberLine
		if err := decode(line, &m); err != nil {
			return nil, err
		}
		user, err := im.person(m.UserID)
		if err != nil {
			return nil, err
		}
		by, _ := im.person(m.ModerationBy)
		return nil, tx.HistoryMember(ctx, im.h, persist.HistoryMemberParams{UserID: user, Role: m.Role,
			JoinedAt: m.JoinedAt, TimeoutUntil: m.TimeoutUntil, BlockedAt: m.BlockedAt, ModerationNote: m.ModerationNote,
			ModerationBy: by, ModerationAt: m.ModerationAt})
	})
}

func (im *importer) bots(ctx context.Context) error {
	return im.batches(ctx, EntryBots, func(tx *persist.Tx, _ int, line []byte) (func(), error) {
		var b persist.ArchiveBot
		if err := decode(line, &b); err != nil {
			return nil, err
		}
		user, err := im.person(b.UserID)
		if err != nil {
			return nil, err
		}
		by, err := im.person(b.CreatedBy)
		if err != nil {
			return nil, err
		}
		cmds := make([]persist.BotCommand, len(b.Commands))
		for i, c := range b.Commands {
			cmds[i] = persist.BotCommand{ID: c.ID, Command: c.Command, Description: c.Description, ArgsHint: c.ArgsHint,
				CreatedAt: c.CreatedAt, UpdatedAt: c.UpdatedAt}
		}
		return nil, tx.HistoryBot(ctx, im.h, persist.HistoryBotParams{UserID: user, CreatedBy: by, CreatedAt: b.CreatedAt, Commands: cmds})
	})
}

// workspaceDetails comes last: the icon, once the uploads are in, and the last update.
func (im *importer) workspaceDetails(ctx context.Context, ws WorkspaceLine) error {
	icon := im.uploads[ws.IconUploadID]
	return im.o.Store.WithTx(ctx, func(tx *persist.Tx) error {
		return tx.HistoryWorkspaceDetails(ctx, im.h, icon, ws.UpdatedAt)
	})
}
