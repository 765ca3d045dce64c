package persist

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"
)

// PrefixUpload starts upload ids.
const PrefixUpload = "upl_"

// Upload limits.
const (
	// MaxFilenameLength bounds a stored filename, in Unicode characters; longer names are cut.
	MaxFilenameLength = 255
	// MaxContentTypeLength bounds a stored content type, in bytes.
	MaxContentTypeLength = 255
	// DefaultContentType is stored when an upload declares none.
	DefaultContentType = "application/octet-stream"
	// defaultFilename is stored when an upload names no file.
	defaultFilename = "upload"
)

// UploadPathPrefix is the API path of an upload's bytes, followed by its id; a workspace icon is
// given in this form.
const UploadPathPrefix = "/api/uploads/"

// Upload is an uploaded file's metadata in its API shape; the bytes live in the upload store
// under StorageKey. Attachments on messages use the same shape.
type Upload struct {
	ID          string    `json:"id"`
	WorkspaceID string    `json:"workspace_id"`
	OwnerID     string    `json:"owner_id"`
	Nonce       string    `json:"nonce,omitempty"`
	Filename    string    `json:"filename"`
	ContentType string    `json:"content_type"`
	ByteSize    int64     `json:"byte_size"`
	Width       *int      `json:"width,omitempty"`
	Height      *int      `json:"height,omitempty"`
	URL         string    `json:"url"`
	CreatedAt   time.Time `json:"created_at"`
	// StorageKey names the object in the upload store (upload-<random>); never shown.
	StorageKey string `json:"-"`
	// SHA256 is the digest of the bytes; the server uses it as the ETag.
	SHA256 []byte `json:"-"`
}

// uploadColumnsOf lists the columns scanUpload reads, qualified by a table alias such as "u.".
func uploadColumnsOf(a string) string {
	return fmt.Sprintf(`%[1]sid, %[1]sworkspace_id, %[1]sowner_id, coalesce(%[1]snonce, ''), %[1]sfilename,
	%[1]scontent_type, %[1]sbyte_size, %[1]swidth, %[1]sheight, %[1]screated_at, %[1]sstorage_key, %[1]ssha256`, a)
}

var uploadColumns = uploadColumnsOf("")

func uploadDest(u *Upload) []any {
	return []any{&u.ID, &u.WorkspaceID, &u.OwnerID, &u.Nonce, &u.Filename, &u.ContentType, &u.ByteSize,
		&u.Width, &u.Height, &u.CreatedAt, &u.StorageKey, &u.SHA256}
}

func scanUpload(row pgx.Row) (Upload, error) {
	var u Upload
	if err := row.Scan(uploadDest(&u)...); err != nil {
		return Upload{}, err
	}
	u.URL = UploadPathPrefix + u.ID
	return u, nil
}

// validateUploadNonce checks an upload nonce. Codes: invalid_request.
func validateUploadNonce(nonce string) error {
	if utf8.RuneCountInString(nonce) > MaxNonceLength || strings.ContainsRune(nonce, 0) {
		return Invalid("nonce must be at most %d characters", MaxNonceLength)
	}
	return nil
}

// UploadPrepare admits the actor to upload a file into a workspace before any byte is read:
// a member who is not a waiting-room guest, timed out or blocked. With a nonce the actor used
// before in this workspace it returns that upload and replayed = true, so the caller answers
// without reading the body. Codes: invalid_request, not_found (workspace), forbidden, conflict
// (the nonce belongs to an upload in another workspace).
func (tx *Tx) UploadPrepare(ctx context.Context, actor Actor, workspaceID, nonce string) (orig Upload, replayed bool, err error) {
	if workspaceID == "" {
		return Upload{}, false, Invalid("workspace_id is required")
	}
	if err := validateUploadNonce(nonce); err != nil {
		return Upload{}, false, err
	}
	m, err := tx.requireMemberToRead(ctx, workspaceID, actor)
	if err != nil {
		return Upload{}, false, err
	}
	if orig, ok, err := tx.uploadReplay(ctx, actor, workspaceID, nonce); ok || err != nil {
		return orig, ok, err
	}
	return Upload{}, false, tx.requireFullWriter(ctx, m, "upload files")
}

// uploadReplay finds the actor's upload with nonce: ok when it is in workspaceID. Codes:
// conflict (it is in another workspace).
func (tx *Tx) uploadReplay(ctx context.Context, actor Actor, workspaceID, nonce string) (Upload, bool, error) {
	if nonce == "" {
		return Upload{}, false, nil
	}
	u, err := scanUpload(tx.queryRow(ctx, `SELECT `+uploadColumns+` FROM uploads WHERE owner_id = $1 AND nonce = $2`,
		actor.UserID, nonce))
	if errors.Is(err, pgx.ErrNoRows) {
		return Upload{}, false, nil
	}
	if err != nil {
		return Upload{}, false, err
	}
	if u.WorkspaceID != workspaceID {
		return Upload{}, false, Conflict("that nonce belongs to an upload in another workspace")
	}
	return u, true, nil
}

// UploadCreateParams is a stored object to record as an upload.
type UploadCreateParams struct {
	WorkspaceID string
	// Nonce makes the upload idempotent per uploader; "" for none.
	Nonce       string
	StorageKey  string
	Filename    string
	ContentType string // "" stores DefaultContentType
	ByteSize    int64
	SHA256      []byte
	// Width and Height are an image's dimensions; nil otherwise.
	Width, Height *int
}

// UploadCreate records an upload whose object is already stored, under the guards of
// UploadPrepare (checked again: the membership may have changed while the bytes arrived).
// replayed means another upload with the same nonce was recorded first and is returned; the
// caller then deletes its own object. Codes: invalid_request, not_found, forbidden, conflict.
func (tx *Tx) UploadCreate(ctx context.Context, actor Actor, p UploadCreateParams) (u Upload, replayed bool, err error) {
	if err := validateUploadNonce(p.Nonce); err != nil {
		return Upload{}, false, err
	}
	if p.ContentType == "" {
		p.ContentType = DefaultContentType
	}
	if len(p.ContentType) > MaxContentTypeLength {
		return Upload{}, false, Invalid("the content type must be at most %d bytes", MaxContentTypeLength)
	}
	m, err := tx.requireMember(ctx, p.WorkspaceID, actor)
	if err != nil {
		return Upload{}, false, err
	}
	if err := tx.requireFullWriter(ctx, m, "upload files"); err != nil {
		return Upload{}, false, err
	}
	u, err = scanUpload(tx.queryRow(ctx, `INSERT INTO uploads (id, workspace_id, owner_id, nonce, storage_key,
			filename, content_type, byte_size, sha256, width, height, created_at)
		VALUES ($1, $2, $3, nullif($4, ''), $5, $6, $7, $8, $9, $10, $11, $12)
		ON CONFLICT (owner_id, nonce) DO NOTHING
		RETURNING `+uploadColumns,
		NewID(PrefixUpload, tx.now), p.WorkspaceID, actor.UserID, p.Nonce, p.StorageKey, CleanFilename(p.Filename),
		p.ContentType, p.ByteSize, p.SHA256, p.Width, p.Height, tx.now))
	if errors.Is(err, pgx.ErrNoRows) {
		// A concurrent upload with the same nonce committed first.
		orig, ok, err := tx.uploadReplay(ctx, actor, p.WorkspaceID, p.Nonce)
		if err == nil && !ok {
			err = Conflict("that nonce was just used for another upload")
		}
		return orig, ok, err
	}
	return u, false, err
}

// CleanFilename is the stored form of an uploaded file's name: its last path element (either
// slash), without control characters, trimmed, at most MaxFilenameLength characters; "upload"
// when nothing is left.
func CleanFilename(name string) string {
	if i := strings.LastIndexAny(name, `/\`); i >= 0 {
		name = name[i+1:]
	}
	name = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) || r == utf8.RuneError {
			return -1
		}
		return r
	}, name)
	name = strings.TrimSpace(name)
	if utf8.RuneCountInString(name) > MaxFilenameLength {
		name = string([]rune(name)[:MaxFilenameLength])
	}
	if name == "" || name == "." || name == ".." {
		return defaultFilename
	}
	return name
}

// UploadGet returns an upload the actor may read: members of its workspace, and waiting-room
// guests only for the workspace icon and files attached to live messages of the guest channel.
// Anyone else gets not_found, so an upload's existence is not revealed. Codes: not_found.
func (tx *Tx) UploadGet(ctx context.Context, actor Actor, id string) (Upload, error) {
	u, err := scanUpload(tx.queryRow(ctx, `SELECT `+uploadColumns+` FROM uploads WHERE id = $1`, id))
	if err != nil {
		return Upload{}, notFoundAs(err, "upload")
	}
	m, err := tx.requireMemberToRead(ctx, u.WorkspaceID, actor)
	if e, ok := ErrorOf(err); ok && (e.Code == CodeForbidden || e.Code == CodeNotFound) {
		return Upload{}, NotFound("upload")
	}
	if err != nil {
		return Upload{}, err
	}
	if m.Role != RoleGuest {
		return u, tx.uploadPrivacyCheck(ctx, actor, u)
	}
	var visible bool
	if err := tx.queryRow(ctx, `SELECT
			EXISTS (SELECT 1 FROM workspaces WHERE id = $1 AND icon_upload_id = $2)
			OR EXISTS (SELECT 1 FROM message_attachments a
				JOIN messages msg ON msg.id = a.message_id AND msg.deleted_at IS NULL
				JOIN channels c ON c.id = msg.channel_id AND c.name = $3
				WHERE a.workspace_id = $1 AND a.upload_id = $2)`,
		u.WorkspaceID, u.ID, GuestChannel).Scan(&visible); err != nil {
		return Upload{}, err
	}
	if !visible {
		return Upload{}, NotFound("upload")
	}
	return u, nil
}

// uploadPrivacyCheck hides from a member an upload that is known only through private channels
// they are not in: someone else's file, not the workspace icon, attached only to messages of
// such channels. A file attached anywhere they read stays readable. Codes: not_found.
func (tx *Tx) uploadPrivacyCheck(ctx context.Context, actor Actor, u Upload) error {
	var hidden bool
	if err := tx.queryRow(ctx, `SELECT $3 <> $4
			AND NOT EXISTS (SELECT 1 FROM workspaces WHERE id = $1 AND icon_upload_id = $2)
			AND EXISTS (SELECT 1 FROM message_attachments a JOIN messages msg ON msg.id = a.message_id
				WHERE a.workspace_id = $1 AND a.upload_id = $2 AND msg.channel_id IS NOT NULL
					AND `+channelHidden("msg.channel_id", "$3")+`)
			AND NOT EXISTS (SELECT 1 FROM message_attachments a JOIN messages msg ON msg.id = a.message_id
				WHERE a.workspace_id = $1 AND a.upload_id = $2
					AND (msg.channel_id IS NULL OR NOT `+channelHidden("msg.channel_id", "$3")+`))`,
		u.WorkspaceID, u.ID, actor.UserID, u.OwnerID).Scan(&hidden); err != nil {
		return err
	}
	if hidden {
		return NotFound("upload")
	}
	return nil
}

// UploadGetByNonce returns the actor's own upload made with nonce in a workspace the actor
// belongs to. Codes: invalid_request, not_found (no such upload), conflict (the nonce belongs
// to an upload in another workspace), forbidden (not a member).
func (tx *Tx) UploadGetByNonce(ctx context.Context, actor Actor, workspaceID, nonce string) (Upload, error) {
	if workspaceID == "" || nonce == "" {
		return Upload{}, Invalid("workspace_id and nonce are required")
	}
	if err := validateUploadNonce(nonce); err != nil {
		return Upload{}, err
	}
	if _, err := tx.requireMemberToRead(ctx, workspaceID, actor); err != nil {
		return Upload{}, err
	}
	u, ok, err := tx.uploadReplay(ctx, actor, workspaceID, nonce)
	if err == nil && !ok {
		err = NotFound("upload")
	}
	return u, err
}

// uploadForLink returns an upload that the actor, admitted to a workspace as m, may attach to a
// message there: the upload belongs to that workspace (so every reader of the message may read
// it), the actor is not a waiting-room guest, and a bot token holds uploads:write (message create
// routes need only messages:write, so the store checks this scope when upload_id is sent).
// Codes: not_found (no such upload in the workspace), forbidden, missing_scope.
func (tx *Tx) uploadForLink(ctx context.Context, actor Actor, m Member, uploadID string) (Upload, error) {
	if actor.IsBotToken() && !actor.HasScope(ScopeUploadsWrite) {
		return Upload{}, Errorf(CodeMissingScope, "attaching a file needs a bot token holding %s", ScopeUploadsWrite)
	}
	if m.Role == RoleGuest {
		return Upload{}, Forbidden("guests in the waiting room cannot attach files")
	}
	u, err := scanUpload(tx.queryRow(ctx, `SELECT `+uploadColumns+` FROM uploads WHERE id = $1 AND workspace_id = $2`,
		uploadID, m.WorkspaceID))
	return u, notFoundAs(err, "upload")
}

// attachmentInsert links an upload to a message; inserted is false when it already was.
func (tx *Tx) attachmentInsert(ctx context.Context, workspaceID, messageID, uploadID, by string) (inserted bool, err error) {
	tag, err := tx.exec(ctx, `INSERT INTO message_attachments (message_id, upload_id, workspace_id, attached_by, created_at)
		VALUES ($1, $2, $3, $4, $5) ON CONFLICT (message_id, upload_id) DO NOTHING`,
		messageID, uploadID, workspaceID, by, tx.now)
	return tag.RowsAffected() == 1, err
}

// UploadAttach links an upload to an existing message and appends message.updated with the
// message as it now reads. The actor must be the message's author, under the change guard of
// its place (not archived, not timed out or blocked), not a waiting-room guest, and the upload
// must belong to the message's workspace. Attaching the same upload again changes nothing and
// appends nothing. Codes: invalid_request, not_found (message, upload), forbidden (not the
// author, guards), missing_scope, message_deleted.
func (tx *Tx) UploadAttach(ctx context.Context, actor Actor, messageID, uploadID string) (MessageChanged, error) {
	if uploadID == "" {
		return MessageChanged{}, Invalid("upload_id is required")
	}
	// FOR SHARE: a concurrent delete waits, then removes the attachment with the message.
	m, member, err := tx.messageFor(ctx, actor, messageID, accessChange, "FOR SHARE OF m")
	if err != nil {
		return MessageChanged{}, err
	}
	if m.AuthorID != actor.UserID {
		return MessageChanged{}, Forbidden("only the author can attach files to a message")
	}
	if m.DeletedAt != nil {
		return MessageChanged{}, Errorf(CodeMessageDeleted, "that message was deleted")
	}
	if _, err := tx.uploadForLink(ctx, actor, member, uploadID); err != nil {
		return MessageChanged{}, err
	}
	inserted, err := tx.attachmentInsert(ctx, m.WorkspaceID, m.ID, uploadID, actor.UserID)
	if err != nil {
		return MessageChanged{}, err
	}
	out, err := tx.MessageGet(ctx, actor, m.ID)
	if err != nil || !inserted {
		return MessageChanged{Message: out}, err
	}
	ev, err := tx.EventAppend(ctx, out.messageEvent("message.updated", actor, nil))
	return MessageChanged{Message: out, Events: []Event{ev}}, err
}

// attachmentsHydrate fills the attachments of msgs (all of one workspace), in one query.
func (tx *Tx) attachmentsHydrate(ctx context.Context, msgs []Message) error {
	if len(msgs) == 0 {
		return nil
	}
	ids, at := messageIndex(msgs)
	for i := range msgs {
		msgs[i].Attachments = []Upload{}
	}
	rows, err := tx.query(ctx, `SELECT a.message_id, `+uploadColumnsOf("u.")+`
		FROM message_attachments a JOIN uploads u ON u.id = a.upload_id
		WHERE a.workspace_id = $1 AND a.message_id = ANY($2)
		ORDER BY a.message_id, a.created_at, a.upload_id`, msgs[0].WorkspaceID, ids)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var id string
		var u Upload
		if err := rows.Scan(append([]any{&id}, uploadDest(&u)...)...); err != nil {
			return err
		}
		u.URL = UploadPathPrefix + u.ID
		i := at[id]
		msgs[i].Attachments = append(msgs[i].Attachments, u)
	}
	return rows.Err()
}

// workspaceIcon resolves an icon reference, /api/uploads/<upload_id> (or the bare upload id),
// to the id of an upload of the workspace; "" clears the icon. Codes: invalid_request.
func (tx *Tx) workspaceIcon(ctx context.Context, workspaceID, ref string) (string, error) {
	ref = strings.TrimSpace(ref)
	if ref == "" {
		return "", nil
	}
	id := strings.TrimPrefix(ref, UploadPathPrefix)
	refused := Invalid("icon_url must be %s<upload_id> of an upload in this workspace", UploadPathPrefix)
	if !strings.HasPrefix(id, PrefixUpload) || strings.ContainsAny(id, "/?#") {
		return "", refused
	}
	var exists bool
	if err := tx.queryRow(ctx, `SELECT EXISTS (SELECT 1 FROM uploads WHERE id = $1 AND workspace_id = $2)`,
		id, workspaceID).Scan(&exists); err != nil {
		return "", err
	}
	if !exists {
		return "", refused
	}
	return id, nil
}
