package persist

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// Fuzz targets for the parsers of outside input that live in persist. Each checks properties of
// what it accepts, not only that nothing panics. .ci/run runs each for a few seconds; a crash
// found is committed under testdata/fuzz/<Target> as a seed.

func FuzzNormalizeHandle(f *testing.F) {
	for _, s := range []string{"", "@Ada", " ada_lovelace ", "a", "ab", "@@x", "ÄDA", strings.Repeat("x", 33), "a\x00b", "-_-"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		h, err := NormalizeHandle(raw)
		if err != nil {
			if _, ok := ErrorOf(err); !ok {
				t.Fatalf("%q: not an application error: %v", raw, err)
			}
			return
		}
		if h == "" {
			return
		}
		if len(h) < 2 || len(h) > 32 {
			t.Fatalf("%q: accepted %q of length %d", raw, h, len(h))
		}
		for _, r := range h {
			if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '_' || r == '-') {
				t.Fatalf("%q: accepted %q holding %q", raw, h, r)
			}
		}
		if again, err := NormalizeHandle(h); err != nil || again != h {
			t.Fatalf("%q: not idempotent: %q then %q, %v", raw, h, again, err)
		}
	})
}

func FuzzNormalizeSetupCode(f *testing.F) {
	for _, s := range []string{"ABCD-EFGH-JKLM", "abcd efgh jkmn", "ABCDEFGHJKLM", "ABCD-EFGH-JKL", "I0O1-xxxx-yyyy", "ÄBCD-EFGH-JKLM", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		code, ok := NormalizeSetupCode(raw)
		if !ok {
			return
		}
		if len(code) != 14 || code[4] != '-' || code[9] != '-' {
			t.Fatalf("%q: accepted as %q", raw, code)
		}
		for i, c := range []byte(code) {
			if i != 4 && i != 9 && strings.IndexByte(setupCodeAlphabet, c) < 0 {
				t.Fatalf("%q: accepted as %q holding %q", raw, code, c)
			}
		}
		if again, ok := NormalizeSetupCode(code); !ok || again != code {
			t.Fatalf("%q: not idempotent: %q then %q", raw, code, again)
		}
	})
}

func FuzzValidateEmoji(f *testing.F) {
	for _, s := range []string{"👍", ":+1:", "", "a\x00", "\xff", strings.Repeat("🙂", 65), "🏳️‍🌈"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, emoji string) {
		if validateEmoji(emoji) != nil {
			return
		}
		if emoji == "" || !utf8.ValidString(emoji) || strings.IndexByte(emoji, 0) >= 0 || utf8.RuneCountInString(emoji) > MaxEmojiLength {
			t.Fatalf("accepted %q, which Postgres text or the limit refuses", emoji)
		}
	})
}

func FuzzParseCursor(f *testing.F) {
	for _, s := range []string{"", "0", "1", "42", "-1", "+5", "007", "9223372036854775807", "9223372036854775808", "1e3", " 1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		c, err := ParseCursor(s)
		if err != nil {
			if e, ok := ErrorOf(err); !ok || e.Code != CodeResyncRequired {
				t.Fatalf("%q: %v", s, err)
			}
			return
		}
		if c < 0 {
			t.Fatalf("%q: negative cursor %d", s, c)
		}
		if s == "" {
			return
		}
		if back, err := ParseCursor(FormatCursor(c)); err != nil || back != c {
			t.Fatalf("%q: %d does not round-trip: %d, %v", s, c, back, err)
		}
	})
}

func FuzzParseMemberCursor(f *testing.F) {
	for _, s := range []string{"", formatMemberCursor(1), formatMemberCursor(1 << 40), "bTA", "bS0x", "!!", "m1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		seq, err := parseMemberCursor(s)
		if err != nil {
			if _, ok := ErrorOf(err); !ok {
				t.Fatalf("%q: not an application error: %v", s, err)
			}
			return
		}
		if s == "" {
			return
		}
		if seq <= 0 {
			t.Fatalf("%q: accepted a sequence of %d", s, seq)
		}
		if back, err := parseMemberCursor(formatMemberCursor(seq)); err != nil || back != seq {
			t.Fatalf("%q: %d does not round-trip", s, seq)
		}
	})
}

func FuzzDecodeSearchCursor(f *testing.F) {
	bound := searchFingerprint("usr_1", SearchParams{WorkspaceID: "wsp_1", Query: "hello", Sort: "newest"})
	f.Add(encodeSearchCursor(searchCursor{Bound: bound, ID: "msg_1"}))
	f.Add("")
	f.Add("e30")
	f.Add("not base64!")
	f.Fuzz(func(t *testing.T, s string) {
		c, err := decodeSearchCursor(s, bound)
		if err != nil {
			if e, ok := ErrorOf(err); !ok || e.Code != CodeInvalidRequest {
				t.Fatalf("%q: %v", s, err)
			}
			return
		}
		if c.Bound != bound || c.ID == "" {
			t.Fatalf("%q: accepted a cursor of another search: %+v", s, c)
		}
		if !utf8.ValidString(c.ID) || strings.IndexByte(c.ID, 0) >= 0 {
			t.Fatalf("%q: accepted an id Postgres cannot hold: %q", s, c.ID)
		}
	})
}
