// Package passwordhash derives and checks password hashes: argon2id in the PHC string format,
// compared in constant time, with a bound on concurrent derivations so that a burst of sign-in
// attempts cannot exhaust memory or CPU. It also holds the length rule every password obeys. It
// imports no project package.
package passwordhash

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"unicode/utf8"

	"golang.org/x/crypto/argon2"
)

// Length bounds of a password, in Unicode code points.
const (
	MinLength = 8
	MaxLength = 256
)

// Check applies the length rule: MinLength to MaxLength code points of valid UTF-8.
func Check(secret string) error {
	if !utf8.ValidString(secret) {
		return errors.New("must be valid UTF-8 text")
	}
	if n := utf8.RuneCountInString(secret); n < MinLength || n > MaxLength {
		return fmt.Errorf("must be %d to %d characters", MinLength, MaxLength)
	}
	return nil
}

// Params are the argon2id cost parameters of new hashes. Stored hashes carry their own, so
// changing Params affects only hashes made afterwards.
type Params struct {
	// Time is the number of passes over memory.
	Time uint32
	// MemoryKiB is the memory each derivation fills, in KiB.
	MemoryKiB uint32
	// Threads is the parallelism (lanes) of one derivation.
	Threads uint8
}

// DefaultParams are RFC 9106's second recommended setting: 3 passes over 64 MiB in 4 lanes.
// With two derivations at a time, password sign-in holds at most 128 MiB.
var DefaultParams = Params{Time: 3, MemoryKiB: 64 * 1024, Threads: 4}

// Sizes of the salt and derived key, in bytes.
const (
	saltLength = 16
	keyLength  = 32
)

// Limits on parameters read from a stored hash, so that a corrupt or hostile row cannot make one
// verification take gigabytes or minutes.
const (
	maxTime      = 16
	maxMemoryKiB = 1 << 20 // 1 GiB
	maxThreads   = 32
)

// DefaultConcurrency is how many derivations may run at once, process-wide.
const DefaultConcurrency = 2

// Config configures a Hasher.
type Config struct {
	// Params are the cost parameters of new hashes. Default DefaultParams.
	Params Params
	// Concurrency bounds simultaneous derivations; callers beyond it wait for a slot or for
	// their context to end. Default DefaultConcurrency.
	Concurrency int
	// AfterDerive, when set, runs after each derivation while its slot is still held: a test
	// signal for observing and pausing requests between verification and the write that
	// follows. Default nil.
	AfterDerive func()
}

// Hasher derives and checks argon2id hashes. One Hasher serves the whole process, so its slot
// bound is process-wide.
type Hasher struct {
	params      Params
	slots       chan struct{}
	afterDerive func()
	dummy       string // a well-formed hash no password matches, checked when there is no hash
	derivations atomic.Int64
}

// New validates cfg and returns a Hasher.
func New(cfg Config) (*Hasher, error) {
	if cfg.Params == (Params{}) {
		cfg.Params = DefaultParams
	}
	if cfg.Concurrency == 0 {
		cfg.Concurrency = DefaultConcurrency
	}
	p := cfg.Params
	if p.Time < 1 || p.Time > maxTime || p.Threads < 1 || p.Threads > maxThreads ||
		p.MemoryKiB < 8*uint32(p.Threads) || p.MemoryKiB > maxMemoryKiB {
		return nil, fmt.Errorf("passwordhash: Params %+v out of range (time 1-%d, threads 1-%d, memory 8×threads KiB to %d KiB)",
			p, maxTime, maxThreads, maxMemoryKiB)
	}
	if cfg.Concurrency < 1 {
		return nil, fmt.Errorf("passwordhash: Concurrency must be at least 1, not %d", cfg.Concurrency)
	}
	// The dummy's key is random rather than derived: verifying against it costs exactly what
	// verifying against a real hash with the current parameters costs, and never matches.
	salt, key := make([]byte, saltLength), make([]byte, keyLength)
	_, _ = rand.Read(salt)
	_, _ = rand.Read(key)
	return &Hasher{params: p, slots: make(chan struct{}, cfg.Concurrency), afterDerive: cfg.AfterDerive,
		dummy: encode(p, salt, key)}, nil
}

// Derivations is how many key derivations the Hasher has run, for tests and metrics.
func (h *Hasher) Derivations() int64 { return h.derivations.Load() }

// Hash derives a new PHC string for secret with a fresh salt. It does not apply Check. It fails
// only when ctx ends while waiting for a slot.
func (h *Hasher) Hash(ctx context.Context, secret string) (string, error) {
	salt := make([]byte, saltLength)
	_, _ = rand.Read(salt)
	key, err := h.derive(ctx, secret, salt, h.params, keyLength)
	if err != nil {
		return "", err
	}
	return encode(h.params, salt, key), nil
}

// Verify reports whether secret matches the PHC string phc, comparing in constant time. An
// empty phc (no account, or no password on file) is checked against a dummy hash, so every
// answer costs one derivation. It fails when ctx ends while waiting for a slot or when phc is
// malformed.
func (h *Hasher) Verify(ctx context.Context, phc, secret string) (bool, error) {
	if phc == "" {
		phc = h.dummy
	}
	p, salt, want, err := decode(phc)
	if err != nil {
		return false, err
	}
	got, err := h.derive(ctx, secret, salt, p, uint32(len(want)))
	if err != nil {
		return false, err
	}
	return subtle.ConstantTimeCompare(got, want) == 1, nil
}

// derive runs one argon2id derivation in a slot.
func (h *Hasher) derive(ctx context.Context, secret string, salt []byte, p Params, keyLen uint32) ([]byte, error) {
	select {
	case h.slots <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	defer func() { <-h.slots }()
	key := argon2.IDKey([]byte(secret), salt, p.Time, p.MemoryKiB, p.Threads, keyLen)
	h.derivations.Add(1)
	if h.afterDerive != nil {
		h.afterDerive()
	}
	return key, nil
}

var b64 = base64.RawStdEncoding

// encode writes the PHC string $argon2id$v=19$m=<KiB>,t=<passes>,p=<lanes>$<salt>$<key>.
func encode(p Params, salt, key []byte) string {
	return fmt.Sprintf("$argon2id$v=%d$m=%d,t=%d,p=%d$%s$%s", argon2.Version, p.MemoryKiB, p.Time, p.Threads,
		b64.EncodeToString(salt), b64.EncodeToString(key))
}

// decode parses a PHC string written by encode, refusing parameters beyond the limits.
func decode(phc string) (Params, []byte, []byte, error) {
	bad := errors.New("passwordhash: malformed argon2id hash")
	parts := strings.Split(phc, "$")
	if len(parts) != 6 || parts[0] != "" || parts[1] != "argon2id" || parts[2] != "v="+strconv.Itoa(argon2.Version) {
		return Params{}, nil, nil, bad
	}
	var p Params
	for _, kv := range strings.Split(parts[3], ",") {
		k, v, ok := strings.Cut(kv, "=")
		n, err := strconv.ParseUint(v, 10, 32)
		if !ok || err != nil {
			return Params{}, nil, nil, bad
		}
		switch k {
		case "m":
			p.MemoryKiB = uint32(n)
		case "t":
			p.Time = uint32(n)
		case "p":
			if n > maxThreads {
				return Params{}, nil, nil, bad
			}
			p.Threads = uint8(n)
		default:
			return Params{}, nil, nil, bad
		}
	}
	if p.Time < 1 || p.Time > maxTime || p.Threads < 1 || p.MemoryKiB < 8*uint32(p.Threads) || p.MemoryKiB > maxMemoryKiB {
		return Params{}, nil, nil, bad
	}
	salt, err := b64.DecodeString(parts[4])
	if err != nil || len(salt) < 8 {
		return Params{}, nil, nil, bad
	}
	key, err := b64.DecodeString(parts[5])
	if err != nil || len(key) < 16 || len(key) > 64 {
		return Params{}, nil, nil, bad
	}
	return p, salt, key, nil
}
