package web

import (
	"fmt"
	"strconv"
	"strings"
	"sync"
)

// emojiFile is the emoji table the client fetches for its picker; the server reads the same
// file, so a shortcode means one emoji everywhere (emojigen writes it; its header says how).
const emojiFile = "static/assets/emoji.txt"

// Emoji is one emoji of the table.
type Emoji struct {
	Char       string   // fully qualified, as the picker sends it
	Name       string   // Unicode's (CLDR's) name, "party popper"
	Category   string   // "Activities"
	Shortcodes []string // Slack's names first, then GitHub's: "tada"
	Tones      bool     // the five skin tones apply (WithTone)
	Version    float64  // the Emoji version, when 12 or newer; 0 for older
}

// WithTone is the emoji in skin tone t (1 light … 5 dark): the modifier goes right after the
// first character, whose emoji presentation selector it replaces. Without tones, or for a t
// outside 1–5, it is the emoji itself.
func (e Emoji) WithTone(t int) string {
	if !e.Tones || t < 1 || t > 5 {
		return e.Char
	}
	r := []rune(e.Char)
	rest := r[1:]
	if len(rest) > 0 && rest[0] == 0xFE0F {
		rest = rest[1:]
	}
	return string(r[0]) + string(rune(0x1F3FA+t)) + string(rest)
}

type emojiIndex struct {
	all    []Emoji
	byCode map[string]int
}

var loadEmoji = sync.OnceValues(func() (*emojiIndex, error) {
	raw, err := static.ReadFile(emojiFile)
	if err != nil {
		return nil, err
	}
	return parseEmoji(string(raw))
})

// EmojiTable is every emoji of the table, in the picker's order.
func EmojiTable() ([]Emoji, error) {
	ix, err := loadEmoji()
	if err != nil {
		return nil, err
	}
	return ix.all, nil
}

// EmojiByShortcode is the emoji a shortcode ("tada", without colons) names.
func EmojiByShortcode(code string) (Emoji, bool) {
	ix, err := loadEmoji()
	if err != nil {
		return Emoji{}, false
	}
	i, ok := ix.byCode[code]
	if !ok {
		return Emoji{}, false
	}
	return ix.all[i], true
}

// parseEmoji reads the table's text; a malformed line or a shortcode named twice is an error.
func parseEmoji(text string) (*emojiIndex, error) {
	ix := &emojiIndex{byCode: map[string]int{}}
	category := ""
	for n, line := range strings.Split(text, "\n") {
		switch {
		case line == "" || strings.HasPrefix(line, "#"):
			continue
		case strings.HasPrefix(line, "="):
			category = line[1:]
			continue
		}
		f := strings.Split(line, "\t")
		if len(f) < 2 || len(f) > 4 || f[0] == "" || f[1] == "" || category == "" {
			return nil, fmt.Errorf("emoji table line %d: %q", n+1, line)
		}
		e := Emoji{Char: f[0], Name: f[1], Category: category}
		if len(f) > 2 && f[2] != "" {
			for _, c := range strings.Split(f[2], " ") {
				if c == "~" {
					c = strings.ReplaceAll(strings.ToLower(e.Name), " ", "_")
				}
				if _, dup := ix.byCode[c]; dup || c == "" {
					return nil, fmt.Errorf("emoji table line %d: shortcode %q empty or named twice", n+1, c)
				}
				ix.byCode[c] = len(ix.all)
				e.Shortcodes = append(e.Shortcodes, c)
			}
		}
		if len(f) > 3 {
			flags := f[3]
			e.Tones = strings.HasPrefix(flags, "t")
			if v := strings.TrimPrefix(flags, "t"); v != "" {
				var err error
				if e.Version, err = strconv.ParseFloat(v, 64); err != nil {
					return nil, fmt.Errorf("emoji table line %d: flags %q", n+1, flags)
				}
			}
		}
		ix.all = append(ix.all, e)
	}
	return ix, nil
}
