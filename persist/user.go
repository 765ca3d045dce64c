package persist

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/url"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"
)

// User kinds.
const (
	KindHuman = "human"
	KindBot   = "bot"
)

// PushoverKeyLength is the exact length of a Pushover user key.
const PushoverKeyLength = 30

// User is a human or a bot. AvatarURL is the explicit avatar only; Avatar adds the email-derived
// fallback. Its JSON form is the public profile every payload embeds (see MarshalJSON).
type User struct {
	ID               string
	Kind             string
	OwnerUserID      string
	DisplayName      string
	Handle           string
	FormerHandle     string
	Email            string
	AvatarURL        string
	PushoverEnabled  bool
	PushoverUserKey  string
	PasswordEnrolled bool
	// EmailNotifications and EmailDelay are the person's missed-activity emails: on or off, and
	// how long a message stays unread first (EmailDelayOff, "2m", "15m", "1h").
	EmailNotifications bool
	EmailDelay         string
	// TimeZone is the person's IANA time zone ("Europe/Paris"), "" while unknown.
	TimeZone  string
	CreatedAt time.Time
	UpdatedAt time.Time
	DeletedAt *time.Time
}

// Avatar is the explicit avatar URL, or a generated one derived from the email.
func (u User) Avatar() string {
	if u.AvatarURL != "" || u.Email == "" {
		return u.AvatarURL
	}
	sum := sha256.Sum256([]byte(u.Email))
	return "https://www.gravatar.com/avatar/" + hex.EncodeToString(sum[:]) + "?d=identicon"
}

// PublicUser is the profile shape other people see. Deleted identities show former_handle and
// deleted_at instead of a handle.
type PublicUser struct {
	ID           string     `json:"id"`
	Kind         string     `json:"kind"`
	OwnerUserID  string     `json:"owner_user_id,omitempty"`
	DisplayName  string     `json:"display_name"`
	Handle       string     `json:"handle,omitempty"`
	AvatarURL    string     `json:"avatar_url,omitempty"`
	TimeZone     string     `json:"time_zone,omitempty"`
	FormerHandle string     `json:"former_handle,omitempty"`
	DeletedAt    *time.Time `json:"deleted_at,omitempty"`
	CreatedAt    time.Time  `json:"created_at"`
}

// Public returns the public profile of u.
func (u User) Public() PublicUser {
	return PublicUser{ID: u.ID, Kind: u.Kind, OwnerUserID: u.OwnerUserID, DisplayName: u.DisplayName,
		Handle: u.Handle, AvatarURL: u.Avatar(), TimeZone: u.TimeZone, FormerHandle: u.FormerHandle, DeletedAt: u.DeletedAt,
		CreatedAt: u.CreatedAt}
}

// userColumnsOf lists the columns scanUser reads, qualified by a table alias such as "u.".
func userColumnsOf(a string) string {
	return fmt.Sprintf(`%[1]sid, %[1]skind, coalesce(%[1]sowner_user_id, ''), %[1]sdisplay_name,
	coalesce(%[1]shandle, ''), coalesce(%[1]sformer_handle, ''), coalesce(%[1]semail, ''),
	coalesce(%[1]savatar_url, ''), %[1]spushover_enabled, coalesce(%[1]spushover_user_key, ''),
	%[1]spassword_hash IS NOT NULL, %[1]semail_notifications, %[1]semail_delay, coalesce(%[1]stime_zone, ''), %[1]screated_at, %[1]supdated_at, %[1]sdeleted_at`, a)
}

var userColumns = userColumnsOf("")

// userDest lists the scan destinations matching userColumnsOf.
func userDest(u *User) []any {
	return []any{&u.ID, &u.Kind, &u.OwnerUserID, &u.DisplayName, &u.Handle, &u.FormerHandle,
		&u.Email, &u.AvatarURL, &u.PushoverEnabled, &u.PushoverUserKey, &u.PasswordEnrolled,
		&u.EmailNotifications, &u.EmailDelay, &u.TimeZone, &u.CreatedAt, &u.UpdatedAt, &u.DeletedAt}
}

func scanUser(row pgx.Row) (User, error) {
	var u User
	err := row.Scan(userDest(&u)...)
	return u, err
}

// UserCreateParams are the fields of a new user.
type UserCreateParams struct {
	Kind        string // default KindHuman
	OwnerUserID string
	DisplayName string
	Handle      string // raw input; normalised
	Email       string // raw input; lowercased
	AvatarURL   string
}

// UserCreate inserts a user. Codes: invalid_request (a field breaks a rule), conflict (handle or
// email taken).
func (tx *Tx) UserCreate(ctx context.Context, p UserCreateParams) (User, error) {
	if p.Kind == "" {
		p.Kind = KindHuman
	}
	name, err := NormalizeDisplayName(p.DisplayName)
	if err != nil {
		return User{}, err
	}
	handle, err := NormalizeHandle(p.Handle)
	if err != nil {
		return User{}, err
	}
	avatar, err := NormalizeAvatarURL(p.AvatarURL)
	if err != nil {
		return User{}, err
	}
	return scanUser(tx.queryRow(ctx, `
		INSERT INTO users (id, kind, owner_user_id, display_name, handle, email, avatar_url, created_at, updated_at)
		VALUES ($1, $2, nullif($3, ''), $4, nullif($5, ''), nullif($6, ''), nullif($7, ''), $8, $8)
		RETURNING `+userColumns,
		NewID(PrefixUser, tx.now), p.Kind, p.OwnerUserID, name, handle, NormalizeEmail(p.Email), avatar, tx.now))
}

// UserGet returns a user by id, deleted ones included (old messages still render them).
// Codes: not_found.
func (tx *Reader) UserGet(ctx context.Context, id string) (User, error) {
	u, err := scanUser(tx.queryRow(ctx, `SELECT `+userColumns+` FROM users WHERE id = $1`, id))
	if err != nil {
		return User{}, notFoundAs(err, "user")
	}
	return u, nil
}

// UserGetByEmail returns the human with this email (compared lowercased). Codes: not_found.
func (tx *Tx) UserGetByEmail(ctx context.Context, email string) (User, error) {
	u, err := scanUser(tx.queryRow(ctx, `SELECT `+userColumns+` FROM users WHERE email = $1 AND deleted_at IS NULL`,
		NormalizeEmail(email)))
	if err != nil {
		return User{}, notFoundAs(err, "user")
	}
	return u, nil
}

// UserFindOrCreateByEmail returns the human with this email, creating one named displayName
// (or the email's local part) when none exists.
func (tx *Tx) UserFindOrCreateByEmail(ctx context.Context, email, displayName string) (User, error) {
	email = NormalizeEmail(email)
	if !validEmail(email) {
		return User{}, Invalid("email must be an address like name@example.com")
	}
	// Insert first and fall back to a read: a concurrent sign-in for the same email then
	// meets the unique index instead of creating a twin.
	if strings.TrimSpace(displayName) == "" {
		displayName, _, _ = strings.Cut(email, "@")
	}
	name, err := NormalizeDisplayName(displayName)
	if err != nil {
		return User{}, err
	}
	if _, err := tx.exec(ctx, `
		INSERT INTO users (id, kind, display_name, email, created_at, updated_at)
		VALUES ($1, 'human', $2, $3, $4, $4)
		ON CONFLICT (email) WHERE email IS NOT NULL DO NOTHING`,
		NewID(PrefixUser, tx.now), name, email, tx.now); err != nil {
		return User{}, err
	}
	return tx.UserGetByEmail(ctx, email)
}

// UserFirst returns the oldest live human, the identity of the development fallback.
// Codes: not_found.
func (tx *Reader) UserFirst(ctx context.Context) (User, error) {
	u, err := scanUser(tx.queryRow(ctx, `SELECT `+userColumns+` FROM users
		WHERE kind = 'human' AND deleted_at IS NULL ORDER BY created_at, id LIMIT 1`))
	if err != nil {
		return User{}, notFoundAs(err, "user")
	}
	return u, nil
}

// UserPatch holds the fields of PATCH /api/me; nil means unchanged.
type UserPatch struct {
	DisplayName     *string
	Handle          *string // "" clears
	AvatarURL       *string // "" clears, restoring the email-derived fallback
	PushoverEnabled *bool
	PushoverUserKey *string // "" clears
	// EmailNotifications and EmailDelay set the missed-activity emails (see EmailDelays).
	EmailNotifications *bool
	EmailDelay         *string
	TimeZone           *string // an IANA zone name; "" clears
}

// UserUpdate applies a patch to a live user. Codes: invalid_request, conflict (handle taken),
// not_found.
func (tx *Tx) UserUpdate(ctx context.Context, id string, p UserPatch) (User, error) {
	u, err := scanUser(tx.queryRow(ctx, `SELECT `+userColumns+` FROM users WHERE id = $1 AND deleted_at IS NULL FOR UPDATE`, id))
	if err != nil {
		return User{}, notFoundAs(err, "user")
	}
	if p.DisplayName != nil {
		if u.DisplayName, err = NormalizeDisplayName(*p.DisplayName); err != nil {
			return User{}, err
		}
	}
	if p.Handle != nil {
		if u.Handle, err = NormalizeHandle(*p.Handle); err != nil {
			return User{}, err
		}
	}
	if p.AvatarURL != nil {
		if u.AvatarURL, err = NormalizeAvatarURL(*p.AvatarURL); err != nil {
			return User{}, err
		}
	}
	if p.PushoverEnabled != nil {
		u.PushoverEnabled = *p.PushoverEnabled
	}
	if p.PushoverUserKey != nil {
		key := strings.TrimSpace(*p.PushoverUserKey)
		if key != "" && !validPushoverKey(key) {
			return User{}, Invalid("notification_settings.pushover_user_key must be exactly %d letters and digits", PushoverKeyLength)
		}
		u.PushoverUserKey = key
	}
	if u.PushoverEnabled && u.PushoverUserKey == "" {
		return User{}, Invalid("notification_settings.pushover_user_key is required when pushover_enabled is true")
	}
	if p.EmailNotifications != nil {
		u.EmailNotifications = *p.EmailNotifications
	}
	if p.EmailDelay != nil {
		if !ValidEmailDelay(*p.EmailDelay) {
			return User{}, Invalid("notification_settings.email_delay must be off, 2m, 15m or 1h")
		}
		u.EmailDelay = *p.EmailDelay
	}
	if p.TimeZone != nil {
		if u.TimeZone, err = NormalizeTimeZone(*p.TimeZone); err != nil {
			return User{}, err
		}
	}
	return scanUser(tx.queryRow(ctx, `
		UPDATE users SET display_name = $2, handle = nullif($3, ''), avatar_url = nullif($4, ''),
			pushover_enabled = $5, pushover_user_key = nullif($6, ''), email_notifications = $8,
			email_delay = $9, time_zone = nullif($10, ''), updated_at = $7
		WHERE id = $1
		RETURNING `+userColumns,
		id, u.DisplayName, u.Handle, u.AvatarURL, u.PushoverEnabled, u.PushoverUserKey, tx.now,
		u.EmailNotifications, u.EmailDelay, u.TimeZone))
}

// NormalizeHandle accepts a handle with or without a leading @ and returns it lowercased and
// without @, or "" for empty input. The broadcast mentions (here, channel, everyone) are no one's
// handle. Codes: invalid_request.
func NormalizeHandle(raw string) (string, error) {
	h := strings.ToLower(strings.TrimPrefix(strings.TrimSpace(raw), "@"))
	if h == "" {
		return "", nil
	}
	if len(h) < 2 || len(h) > 32 {
		return "", Invalid("handle must be 2 to 32 characters")
	}
	for _, r := range h {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '_' || r == '-') {
			return "", Invalid("handle may contain only letters, digits, _ and -")
		}
	}
	if isBroadcast(h) {
		return "", Invalid("the handle %q is reserved: @%s mentions many people at once", h, h)
	}
	return h, nil
}

// MaxDisplayNameLength bounds display names, in Unicode characters.
const MaxDisplayNameLength = 80

// NormalizeDisplayName trims a display name and checks it is 1-80 characters. Codes: invalid_request.
func NormalizeDisplayName(raw string) (string, error) {
	name := strings.TrimSpace(raw)
	if name == "" {
		return "", Invalid("display_name must not be empty")
	}
	if utf8.RuneCountInString(name) > MaxDisplayNameLength {
		return "", Invalid("display_name must be at most %d characters", MaxDisplayNameLength)
	}
	return name, nil
}

// NormalizeAvatarURL accepts "" or an absolute http(s) URL. Codes: invalid_request.
func NormalizeAvatarURL(raw string) (string, error) {
	s := strings.TrimSpace(raw)
	if s == "" {
		return "", nil
	}
	if !IsWebURL(s) || len(s) > 2048 {
		return "", Invalid("avatar_url must be an http or https URL")
	}
	return s, nil
}

// IsWebURL reports whether s is an absolute http or https URL with a host.
func IsWebURL(s string) bool {
	u, err := url.Parse(s)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != "" && u.User == nil
}

// NormalizeEmail trims and lowercases an email address.
func NormalizeEmail(email string) string { return strings.ToLower(strings.TrimSpace(email)) }

func validEmail(email string) bool {
	local, domain, ok := strings.Cut(email, "@")
	return ok && local != "" && domain != "" && !strings.ContainsAny(email, " \t\r\n<>") &&
		!strings.Contains(domain, "@") && len(email) <= 254
}

func validPushoverKey(key string) bool {
	if len(key) != PushoverKeyLength {
		return false
	}
	for _, r := range key {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9') {
			return false
		}
	}
	return true
}

// UserDelete retires a human for good: the account is tombstoned (deleted_at set, handle and
// email released), every session ends, and each of their user bots is deleted with everything it
// holds (rule 5 of §User), all in this transaction. Codes: not_found (no live human).
func (tx *Tx) UserDelete(ctx context.Context, id string) error {
	if _, err := scanUser(tx.queryRow(ctx, `SELECT `+userColumns+` FROM users
		WHERE id = $1 AND kind = 'human' AND deleted_at IS NULL FOR UPDATE`, id)); err != nil {
		return notFoundAs(err, "user")
	}
	rows, err := tx.query(ctx, `SELECT `+userColumns+` FROM users
		WHERE owner_user_id = $1 AND kind = 'bot' AND deleted_at IS NULL ORDER BY id FOR UPDATE`, id)
	if err != nil {
		return err
	}
	var bots []User
	for rows.Next() {
		var u User
		if err := rows.Scan(userDest(&u)...); err != nil {
			rows.Close()
			return err
		}
		bots = append(bots, u)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	for _, bot := range bots {
		active, err := tx.botWorkspaces(ctx, botActiveWorkspacesSQL, bot.ID, tx.now)
		if err != nil {
			return err
		}
		if _, err := tx.botRetire(ctx, bot, active); err != nil {
			return err
		}
	}
	rows, err = tx.query(ctx, `UPDATE sessions SET revoked_at = $2 WHERE user_id = $1 AND revoked_at IS NULL
		RETURNING id`, id, tx.now)
	if err != nil {
		return err
	}
	if err := tx.noteRevokedSessions(rows); err != nil {
		return err
	}
	// Public channels' member counts leave deleted accounts out: so must their count of leavers.
	if _, err := tx.exec(ctx, `DELETE FROM channel_person_states WHERE user_id = $1`, id); err != nil {
		return err
	}
	_, err = tx.exec(ctx, `UPDATE users SET handle = NULL, email = NULL, deleted_at = $2, updated_at = $2 WHERE id = $1`, id, tx.now)
	return err
}
