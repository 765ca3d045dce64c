package persist

import (
	"strings"
	"time"

	// The zone database is built in: a server image without /usr/share/zoneinfo must accept
	// the same names as the browsers that send them.
	_ "time/tzdata"
)

// MaxTimeZoneLength bounds a time zone name; the longest IANA name is 32 characters.
const MaxTimeZoneLength = 64

// NormalizeTimeZone trims an IANA time zone name ("America/New_York", "UTC") and checks that
// the zone database knows it; "" clears. "Local" (the server's own zone) is refused: it would
// mean a different zone on every replica. Codes: invalid_request.
func NormalizeTimeZone(raw string) (string, error) {
	tz := strings.TrimSpace(raw)
	if tz == "" {
		return "", nil
	}
	if len(tz) > MaxTimeZoneLength || tz == "Local" || strings.ContainsAny(tz, "\\.\x00") {
		return "", Invalid("time_zone must be an IANA time zone name such as Europe/Paris")
	}
	if _, err := time.LoadLocation(tz); err != nil {
		return "", Invalid("time_zone must be an IANA time zone name such as Europe/Paris")
	}
	return tz, nil
}
