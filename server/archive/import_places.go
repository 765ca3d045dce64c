package archive

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"regexp"
	"time"

	"github.com/natterchat/natter/persist"
	"github.com/natterchat/natter/server/blob"
)

// maxUploadBytes is the largest file an import accepts: the API's own upload limit.
const maxUploadBytes = 64 << 20

// uploadIDPattern is an upload id as Natter makes them; an entry name is built only from one.
var uploadIDPattern = regexp.MustCompile(`^upl_[0-9a-z]{26}$`)

// uploadFiles stores each upload's bytes under a fresh key and records it; a file already
// imported (a repeated run) is not stored again. The bytes are checked against the size and
// SHA-256 the archive lists; a mismatch or a missing file skips the upload.
func (im *importer) uploadFiles(ctx context.Context) error {
	return eachLine(ctx, im.zr, EntryUploads, func(n int, line []byte) error {
		var u persist.ArchiveUpload
		if err := decode(line, &u); err != nil {
			im.report.skip(EntryUploads, n, err)
			return nil
		}
		err := im.uploadFile(ctx, u)
		if err != nil && !im.skippable(ctx, err) {
			return fmt.Errorf("line %d: %w", n, err)
		}
		if err != nil {
			im.report.skip(EntryUploads, n, err)
		}
		return nil
	})
}

func (im *importer) uploadFile(ctx context.Context, u persist.ArchiveUpload) error {
	if !uploadIDPattern.MatchString(u.ID) {
		return bad("upload id %q is malformed", u.ID)
	}
	owner, err := im.person(u.OwnerID)
	if err != nil {
		return err
	}
	known, err := persist.WithTxV(ctx, im.o.Store, func(tx *persist.Tx) (persist.Imported, error) {
		id, ok, err := tx.HistoryLookup(ctx, im.h, persist.HistoryKindUpload, u.ID)
		return persist.Imported{ID: id, Created: ok}, err
	})
	if err != nil {
		return err
	}
	if known.Created {
		im.uploads[u.ID] = known.ID
		im.report.count(persist.HistoryKindUpload, persist.Imported{ID: known.ID})
		return nil
	}
	if im.o.Blobs == nil {
		return errors.New("no upload store to put the file in")
	}
	sum, err := hex.DecodeString(u.SHA256)
	if err != nil || len(sum) != 32 || u.ByteSize < 0 || u.ByteSize > maxUploadBytes {
		return bad("upload %s lists a bad size or SHA-256", u.ID)
	}
	f, err := im.zr.Open(UploadPrefix + u.ID)
	if errors.Is(err, fs.ErrNotExist) {
		return bad("the bytes of upload %s are not in the archive", u.ID)
	}
	if err != nil {
		return err
	}
	defer f.Close()
	key := blob.NewKey()
	info, err := im.o.Blobs.Put(ctx, key, io.LimitReader(f, u.ByteSize+1))
	if err != nil {
		return fmt.Errorf("store upload %s: %w", u.ID, err)
	}
	if info.Size != u.ByteSize || hex.EncodeToString(info.SHA256) != u.SHA256 {
		_ = im.o.Blobs.Delete(context.WithoutCancel(ctx), key)
		return bad("the bytes of upload %s do not match its size and SHA-256", u.ID)
	}
	got, err := persist.WithTxV(ctx, im.o.Store, func(tx *persist.Tx) (persist.Imported, error) {
		got, err := tx.HistoryUpload(ctx, im.h, persist.HistoryUploadParams{SourceID: u.ID, OwnerID: owner, StorageKey: key,
			Filename: u.Filename, ContentType: u.ContentType, ByteSize: info.Size, SHA256: info.SHA256, CreatedAt: u.CreatedAt})
		if err == nil && got.Created {
			err = tx.HistoryUploadDetails(ctx, im.h, got.ID, u.Nonce, u.Width, u.Height)
		}
		return got, err
	})
	if err != nil || !got.Created {
		_ = im.o.Blobs.Delete(context.WithoutCancel(ctx), key) // nothing refers to it
	}
	if err != nil {
		return err
	}
	im.uploads[u.ID] = got.ID
	im.report.count(persist.HistoryKindUpload, got)
	return nil
}

func (im *importer) channelsIn(ctx context.Context) error {
	return im.batches(ctx, EntryChannels, func(tx *persist.Tx, _ int, line []byte) (func(), error) {
		var c ChannelLine
		if err := decode(line, &c); err != nil {
			return nil, err
		}
		creator, _ := im.person(c.CreatedBy)
		got, err := tx.HistoryChannel(ctx, im.h, persist.HistoryChannelParams{SourceID: c.ID, Name: c.Name,
			Title: c.DisplayTitle, Private: c.Visibility == persist.VisibilityPrivate, Archived: c.ArchivedAt != nil,
			CreatedAt: c.CreatedAt, CreatorID: creator})
		if err == nil && got.Created {
			err = tx.HistoryChannelDetails(ctx, im.h, got.ID, persist.HistoryChannelDetails{Kind: c.Kind,
				ExternalManaged: c.ExternalManaged, ExternalRef: c.ExternalRef, ExternalURL: c.ExternalURL,
				SidebarSection: c.SidebarSection, ArchivedAt: c.ArchivedAt, UpdatedAt: c.UpdatedAt})
		}
		return func() {
			im.channels[c.ID] = got.ID
			im.report.count(persist.HistoryKindChannel, got)
		}, err
	})
}

func (im *importer) channelMembersIn(ctx context.Context) error {
	return im.batches(ctx, EntryChannelMembers, func(tx *persist.Tx, _ int, line []byte) (func(), error) {
		var m persist.ArchiveChannelMember
		if err := decode(line, &m); err != nil {
			return nil, err
		}
		c, ok := im.channels[m.ChannelID]
		user, err := im.person(m.UserID)
		if err == nil && !ok {
			err = bad("channel %s was not imported", m.ChannelID)
		}
		if err != nil {
			return nil, err
		}
		if err := tx.HistoryChannelMembers(ctx, im.h, c, []string{user}); err != nil {
			return nil, err
		}
		by, _ := im.person(m.AddedBy)
		return nil, tx.HistoryChannelMemberDetails(ctx, im.h, c, user, by, m.AddedAt)
	})
}

func (im *importer) dmsIn(ctx context.Context) error {
	return im.batches(ctx, EntryDMs, func(tx *persist.Tx, _ int, line []byte) (func(), error) {
		var d persist.ArchiveDM
		if err := decode(line, &d); err != nil {
			return nil, err
		}
		ids := make([]string, 0, len(d.Members))
		for _, m := range d.Members {
			id, err := im.person(m.UserID)
			if err != nil {
				return nil, err
			}
			ids = append(ids, id)
		}
		got, err := tx.HistoryConversation(ctx, im.h, persist.HistoryConversationParams{SourceID: d.ID, MemberIDs: ids,
			CreatedAt: d.CreatedAt})
		return func() {
			im.dms[d.ID] = got.ID
			im.report.count(persist.HistoryKindConversation, got)
		}, err
	})
}

// place is the Natter place of a message's source place.
func (im *importer) place(m persist.ArchiveMessage) (persist.Place, error) {
	if id, ok := im.channels[m.ChannelID]; ok && m.ChannelID != "" {
		return persist.Place{ChannelID: id}, nil
	}
	if id, ok := im.dms[m.DirectConversationID]; ok && m.DirectConversationID != "" {
		return persist.Place{DMID: id}, nil
	}
	return persist.Place{}, bad("the place of message %s was not imported", m.ID)
}

// message is the Natter id of a source message: from the cache of recent roots, or the store.
func (im *importer) message(ctx context.Context, tx *persist.Tx, id string) (string, error) {
	if got, ok := im.roots[id]; ok {
		return got, nil
	}
	got, ok, err := tx.HistoryLookup(ctx, im.h, persist.HistoryKindMessage, id)
	if err == nil && !ok {
		err = bad("message %s was not imported", id)
	}
	return got, err
}

// deletedBody stands in for a tombstone's empty body until the details step empties it.
const deletedBody = "(deleted)"

func (im *importer) messagesIn(ctx context.Context) error {
	return im.batches(ctx, EntryMessages, func(tx *persist.Tx, _ int, line []byte) (func(), error) {
		var m persist.ArchiveMessage
		if err := decode(line, &m); err != nil {
			return nil, err
		}
		p, err := im.place(m)
		if err != nil {
			return nil, err
		}
		author, err := im.person(m.AuthorID)
		if err != nil {
			return nil, err
		}
		parent := ""
		if m.ParentMessageID != "" {
			if parent, err = im.message(ctx, tx, m.ParentMessageID); err != nil {
				return nil, err
			}
		}
		body := m.Body
		if m.DeletedAt != nil && body == "" {
			body = deletedBody
		}
		got, err := tx.HistoryMessage(ctx, im.h, persist.HistoryMessageParams{SourceID: m.ID, Place: p, AuthorID: author,
			ParentID: parent, Body: body, CreatedAt: m.CreatedAt, EditedAt: m.EditedAt})
		if err != nil {
			return nil, err
		}
		if got.Created {
			if err := im.reactionsAndFiles(ctx, tx, got.ID, m); err != nil {
				return nil, err
			}
		}
		return func() {
			im.report.count(persist.HistoryKindMessage, got)
			if parent == "" {
				if len(im.roots) >= rootCache {
					clear(im.roots)
				}
				im.roots[m.ID] = got.ID
			}
		}, nil
	})
}

// reactionsAndFiles adds a new message's reactions and attachments, in the transaction that
// wrote it, so a repeated run finds them whole or not at all.
func (im *importer) reactionsAndFiles(ctx context.Context, tx *persist.Tx, id string, m persist.ArchiveMessage) error {
	for _, r := range m.Reactions {
		user, err := im.person(r.UserID)
		if err != nil {
			return err
		}
		if _, err := tx.HistoryReaction(ctx, im.h, id, r.Emoji, user, r.CreatedAt); err != nil {
			return err
		}
	}
	for _, a := range m.Attachments {
		up, ok := im.uploads[a.UploadID]
		if !ok {
			return bad("upload %s of message %s was not imported", a.UploadID, m.ID)
		}
		by, err := im.person(a.AttachedBy)
		if err != nil {
			return err
		}
		if _, err := tx.HistoryAttach(ctx, im.h, id, up); err != nil {
			return err
		}
		if err := tx.HistoryAttachmentDetails(ctx, im.h, id, up, by, a.CreatedAt); err != nil {
			return err
		}
	}
	return nil
}

func (im *importer) pinsIn(ctx context.Context) error {
	return im.batches(ctx, EntryPins, func(tx *persist.Tx, _ int, line []byte) (func(), error) {
		var p PinLine
		if err := decode(line, &p); err != nil {
			return nil, err
		}
		msg, err := im.message(ctx, tx, p.MessageID)
		if err != nil {
			return nil, err
		}
		by, err := im.person(p.PinnedBy)
		if err != nil {
			return nil, err
		}
		_, err = tx.HistoryPin(ctx, im.h, msg, by, p.PinnedAt)
		return nil, err
	})
}

// messageDetails gives every message what the history writer does not take — kind, quote (the
// quoted message may come later in the archive), nonce, deletion, thread state — once all are in.
func (im *importer) messageDetails(ctx context.Context) error {
	return im.batches(ctx, EntryMessages, func(tx *persist.Tx, _ int, line []byte) (func(), error) {
		// A line the first pass skipped was reported there.
		var m persist.ArchiveMessage
		if decode(line, &m) != nil {
			return nil, nil
		}
		id, known, err := tx.HistoryLookup(ctx, im.h, persist.HistoryKindMessage, m.ID)
		if err != nil || !known {
			return nil, err
		}
		d := persist.HistoryMessageDetails{Kind: m.Kind, Nonce: m.Nonce, DeletedAt: m.DeletedAt}
		if m.QuotedMessageID != "" {
			d.QuotedMessageID, _ = im.message(ctx, tx, m.QuotedMessageID) // a quote of what is not here is dropped
		}
		if t := m.Thread; t != nil {
			authors := make([]string, 0, len(t.LastReplyAuthorIDs))
			for _, a := range t.LastReplyAuthorIDs {
				if got, err := im.person(a); err == nil {
					authors = append(authors, got)
				}
			}
			at := t.LastReplyAt
			d.Thread = &persist.ThreadState{ReplyCount: t.ReplyCount, LastReplyAt: &at, LastReplyAuthorIDs: authors}
			d.LastThreadSeq = t.LastThreadSeq
		}
		return nil, tx.HistoryMessageDetails(ctx, im.h, id, d)
	})
}

func (im *importer) dmDetails(ctx context.Context) error {
	return im.batches(ctx, EntryDMs, func(tx *persist.Tx, _ int, line []byte) (func(), error) {
		var d persist.ArchiveDM
		if decode(line, &d) != nil {
			return nil, nil // reported by the first pass
		}
		id, ok := im.dms[d.ID]
		if !ok {
			return nil, nil // reported by the first pass
		}
		hidden := map[string]time.Time{}
		for _, m := range d.Members {
			if m.HiddenAt != nil {
				if u, err := im.person(m.UserID); err == nil {
					hidden[u] = *m.HiddenAt
				}
			}
		}
		creator, _ := im.person(d.CreatedBy)
		return nil, tx.HistoryConversationDetails(ctx, im.h, id, creator, d.LastActivityAt, hidden)
	})
}

func (im *importer) receiptsIn(ctx context.Context) error {
	return im.batches(ctx, EntryReceipts, func(tx *persist.Tx, _ int, line []byte) (func(), error) {
		var r persist.ArchiveReceipt
		if err := decode(line, &r); err != nil {
			return nil, err
		}
		var p persist.Place
		if id, ok := im.channels[r.ScopeID]; ok {
			p.ChannelID = id
		} else if id, ok := im.dms[r.ScopeID]; ok {
			p.DMID = id
		} else {
			return nil, bad("the place %s of a read receipt was not imported", r.ScopeID)
		}
		user, err := im.person(r.UserID)
		if err != nil {
			return nil, err
		}
		return nil, tx.HistoryReceipt(ctx, im.h, p, user, r.LastReadSeq, r.LastReadAt)
	})
}
