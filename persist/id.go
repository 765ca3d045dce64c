package persist

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"strings"
	"time"

	"github.com/oklog/ulid/v2"
)

// Id prefixes. Ids are a prefix plus a lowercase, time-sortable ULID.
const (
	PrefixUser      = "usr_"
	PrefixSession   = "ses_"
	PrefixWorkspace = "wsp_"
	PrefixChannel   = "chn_"
	PrefixDM        = "dm_"
	PrefixMessage   = "msg_"
	PrefixEvent     = "evt_"
)

// NewID returns prefix plus a new ULID stamped with now.
func NewID(prefix string, now time.Time) string {
	return prefix + strings.ToLower(ulid.MustNew(ulid.Timestamp(now), rand.Reader).String())
}

// RouteID derives the public route id of an internal id: the route letter and the 16 random
// characters of the id's ULID in upper case (the shape ClickClack clients validate, such as
// `C7ZK…`). It is stored beside the id, unique, so it can be looked up.
func RouteID(letter, id string) string {
	_, rest, _ := strings.Cut(id, "_")
	if len(rest) > 16 {
		rest = rest[len(rest)-16:]
	}
	return letter + strings.ToUpper(rest)
}

// NewSecret returns a random token with prefix (such as "sst_") and the SHA-256 hash it is
// stored under. The raw value is shown once and never stored.
func NewSecret(prefix string) (raw string, hash []byte) {
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	raw = prefix + base64.RawURLEncoding.EncodeToString(b)
	return raw, HashSecret(raw)
}

// HashSecret is the stored form of a token or code.
func HashSecret(raw string) []byte {
	h := sha256.Sum256([]byte(raw))
	return h[:]
}
