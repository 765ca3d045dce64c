package passwordhash

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// cheap are parameters that keep tests fast; the format and checks are the same.
var cheap = Params{Time: 1, MemoryKiB: 64, Threads: 1}

func TestCheck(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		secret string
		ok     bool
	}{
		{"SevenIsTooShort", "1234567", false},
		{"EightIsEnough", "12345678", true},
		{"CodePointsNotBytes", strings.Repeat("é", 7), false},
		{"EightCodePoints", strings.Repeat("é", 8), true},
		{"MaxLength", strings.Repeat("a", 256), true},
		{"TooLong", strings.Repeat("a", 257), false},
		{"MaxLengthMultibyte", strings.Repeat("密", 256), true},
		{"InvalidUTF8", "12345678\xff", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			err := Check(tc.secret)
			if tc.ok {
				require.NoError(t, err)
			} else {
				require.Error(t, err)
			}
		})
	}
}

func TestHashAndVerify(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	h, err := New(Config{Params: cheap})
	require.NoError(t, err)

	phc, err := h.Hash(ctx, "correct horse")
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(phc, "$argon2id$v=19$m=64,t=1,p=1$"), phc)
	again, err := h.Hash(ctx, "correct horse")
	require.NoError(t, err)
	require.NotEqual(t, phc, again, "a fresh salt each time")

	ok, err := h.Verify(ctx, phc, "correct horse")
	require.NoError(t, err)
	require.True(t, ok)
	ok, err = h.Verify(ctx, phc, "correct horsE")
	require.NoError(t, err)
	require.False(t, ok)
	require.EqualValues(t, 4, h.Derivations())

	// A hash keeps its own parameters: a Hasher with other defaults still verifies it.
	other, err := New(Config{Params: Params{Time: 2, MemoryKiB: 128, Threads: 2}})
	require.NoError(t, err)
	ok, err = other.Verify(ctx, phc, "correct horse")
	require.NoError(t, err)
	require.True(t, ok)
}

func TestVerifyWithoutHashCostsOneDerivation(t *testing.T) {
	t.Parallel()
	h, err := New(Config{Params: cheap})
	require.NoError(t, err)
	for _, secret := range []string{"", "anything at all", h.dummy} {
		before := h.Derivations()
		ok, err := h.Verify(t.Context(), "", secret)
		require.NoError(t, err)
		require.False(t, ok)
		require.Equal(t, before+1, h.Derivations())
	}
}

func TestVerifyRefusesMalformedHashes(t *testing.T) {
	t.Parallel()
	h, err := New(Config{Params: cheap})
	require.NoError(t, err)
	good, err := h.Hash(t.Context(), "correct horse")
	require.NoError(t, err)
	parts := strings.Split(good, "$")
	for name, phc := range map[string]string{
		"Bcrypt":         "$2a$10$abcdefghijklmnopqrstuv",
		"Argon2i":        strings.Replace(good, "argon2id", "argon2i", 1),
		"OldVersion":     strings.Replace(good, "v=19", "v=16", 1),
		"HugeMemory":     strings.Replace(good, "m=64,", "m=4194304,", 1),
		"ManyPasses":     strings.Replace(good, "t=1,", "t=1000,", 1),
		"ZeroLanes":      strings.Replace(good, "p=1$", "p=0$", 1),
		"UnknownParam":   strings.Replace(good, "p=1$", "p=1,x=2$", 1),
		"BadSalt":        strings.Join([]string{"", parts[1], parts[2], parts[3], "!!", parts[5]}, "$"),
		"ShortKey":       strings.Join([]string{"", parts[1], parts[2], parts[3], parts[4], "AAAA"}, "$"),
		"TrailingFields": good + "$extra",
	} {
		_, err := h.Verify(t.Context(), phc, "correct horse")
		require.Error(t, err, name)
	}
}

func TestConcurrencyIsBounded(t *testing.T) {
	t.Parallel()
	entered := make(chan struct{}, DefaultConcurrency)
	release := make(chan struct{})
	h, err := New(Config{Params: cheap, AfterDerive: func() {
		entered <- struct{}{}
		<-release
	}})
	require.NoError(t, err)
	done := make(chan error, DefaultConcurrency)
	for range DefaultConcurrency {
		go func() {
			_, err := h.Hash(context.Background(), "correct horse")
			done <- err
		}()
	}
	for range DefaultConcurrency {
		<-entered
	}
	// Both slots are held: a third derivation cannot start, and a waiter whose context ends
	// gives up without deriving.
	select {
	case h.slots <- struct{}{}:
		t.Fatal("a third derivation found a free slot")
	default:
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	_, err = h.Verify(ctx, "", "correct horse")
	require.ErrorIs(t, err, context.Canceled)
	close(release)
	for range DefaultConcurrency {
		require.NoError(t, <-done)
	}
	require.EqualValues(t, DefaultConcurrency, h.Derivations())
}

func TestNewValidates(t *testing.T) {
	t.Parallel()
	for _, cfg := range []Config{
		{Params: Params{Time: 0, MemoryKiB: 64, Threads: 1}},
		{Params: Params{Time: 1, MemoryKiB: 4, Threads: 1}},
		{Params: Params{Time: 1, MemoryKiB: 64, Threads: 0}},
		{Params: cheap, Concurrency: -1},
	} {
		_, err := New(cfg)
		require.Error(t, err, "%+v", cfg)
	}
	h, err := New(Config{})
	require.NoError(t, err)
	require.Equal(t, DefaultParams, h.params)
	require.Equal(t, DefaultConcurrency, cap(h.slots))
}

// BenchmarkDerive measures one derivation with the default parameters.
func BenchmarkDerive(b *testing.B) {
	h, err := New(Config{})
	require.NoError(b, err)
	phc, err := h.Hash(context.Background(), "correct horse battery staple")
	require.NoError(b, err)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := h.Verify(context.Background(), phc, "correct horse battery staple"); err != nil {
			b.Fatal(err)
		}
	}
}
