package persist

import (
	"strings"
	"unicode"
)

// MaxSlugLength bounds workspace slugs and channel names, in characters.
const MaxSlugLength = 80

// Slugify lowercases s and joins its runs of letters and digits with single hyphens:
// "Team Chat!" becomes "team-chat". It returns "" when s has no letter or digit.
func Slugify(s string) string {
	var b strings.Builder
	pendingDash := false
	n := 0
	for _, r := range strings.ToLower(s) {
		if unicode.IsLetter(r) || unicode.IsDigit(r) || r == '_' {
			if pendingDash && b.Len() > 0 {
				b.WriteByte('-')
				n++
			}
			pendingDash = false
			if n >= MaxSlugLength {
				break
			}
			b.WriteRune(r)
			n++
			continue
		}
		pendingDash = true
	}
	return strings.Trim(b.String(), "-")
}
