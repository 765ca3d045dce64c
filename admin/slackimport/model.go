package slackimport

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// user is an entry of users.json or org_users.json.
type user struct {
	ID                string  `json:"id"`
	Name              string  `json:"name"`
	RealName          string  `json:"real_name"`
	Deleted           bool    `json:"deleted"`
	IsBot             bool    `json:"is_bot"`
	IsAppUser         bool    `json:"is_app_user"`
	IsAdmin           bool    `json:"is_admin"`
	IsOwner           bool    `json:"is_owner"`
	IsRestricted      bool    `json:"is_restricted"`
	IsUltraRestricted bool    `json:"is_ultra_restricted"`
	Profile           profile `json:"profile"`
}

type profile struct {
	Email       string `json:"email"`
	RealName    string `json:"real_name"`
	DisplayName string `json:"display_name"`
	Image192    string `json:"image_192"`
	Image512    string `json:"image_512"`
	BotID       string `json:"bot_id"`
}

// conversation is an entry of channels.json, groups.json, dms.json or mpims.json.
type conversation struct {
	ID         string   `json:"id"`
	Name       string   `json:"name"`
	Created    int64    `json:"created"`
	Creator    string   `json:"creator"`
	IsArchived bool     `json:"is_archived"`
	Members    []string `json:"members"`
	Topic      struct {
		Value string `json:"value"`
	} `json:"topic"`
	Purpose struct {
		Value string `json:"value"`
	} `json:"purpose"`
}

// message is one entry of a conversation's day file.
type message struct {
	Type        string `json:"type"`
	Subtype     string `json:"subtype"`
	TS          stamp  `json:"ts"`
	ThreadTS    stamp  `json:"thread_ts"`
	User        string `json:"user"`
	BotID       string `json:"bot_id"`
	Username    string `json:"username"`
	Text        string `json:"text"`
	Hidden      bool   `json:"hidden"`
	UserProfile *struct {
		RealName    string `json:"real_name"`
		DisplayName string `json:"display_name"`
		Name        string `json:"name"`
	} `json:"user_profile"`
	BotProfile *struct {
		Name string `json:"name"`
	} `json:"bot_profile"`
	Edited *struct {
		User string `json:"user"`
		TS   stamp  `json:"ts"`
	} `json:"edited"`
	Reactions []struct {
		Name  string   `json:"name"`
		Users []string `json:"users"`
	} `json:"reactions"`
	PinnedTo []string `json:"pinned_to"`
	Files    []file   `json:"files"`
	// Attachments are legacy rich attachments (bots, unfurls): their fallback text stands in
	// for a message without text.
	Attachments []struct {
		Fallback string `json:"fallback"`
		Text     string `json:"text"`
	} `json:"attachments"`
}

// file is a file shared in a message: the export carries its metadata and URLs, never bytes.
type file struct {
	ID                 string `json:"id"`
	Name               string `json:"name"`
	Title              string `json:"title"`
	Mimetype           string `json:"mimetype"`
	Mode               string `json:"mode"`
	URLPrivate         string `json:"url_private"`
	URLPrivateDownload string `json:"url_private_download"`
	Created            int64  `json:"created"`
}

// displayName is the best name a file has.
func (f file) displayName() string {
	for _, n := range []string{f.Name, f.Title, f.ID} {
		if strings.TrimSpace(n) != "" {
			return n
		}
	}
	return "unnamed file"
}

// stamp is a Slack timestamp as written: a string ("1546300800.000200"), in old exports
// sometimes a number.
type stamp string

// UnmarshalJSON takes a string or a number, so that a malformed one is found by parseTS and
// reported for its message, not by the decoder for the whole day.
func (s *stamp) UnmarshalJSON(b []byte) error {
	var str string
	if err := json.Unmarshal(b, &str); err == nil {
		*s = stamp(str)
		return nil
	}
	var n json.Number
	if err := json.Unmarshal(b, &n); err != nil {
		return fmt.Errorf("timestamp: %s is neither a string nor a number", b)
	}
	*s = stamp(n)
	return nil
}

// parseTS reads a Slack timestamp ("1546300800.000200": seconds, then microseconds, which
// also make it unique in its conversation) as a time. A timestamp that is not of that shape,
// or before 2000 or after 2100, is refused: Slack never wrote one.
func parseTS(ts stamp) (time.Time, error) {
	s := string(ts)
	sec, frac, _ := strings.Cut(s, ".")
	n, err := strconv.ParseInt(sec, 10, 64)
	if err != nil || sec == "" || strings.HasPrefix(sec, "-") {
		return time.Time{}, fmt.Errorf("bad timestamp %q", s)
	}
	var micros int64
	if frac != "" {
		if len(frac) > 9 {
			return time.Time{}, fmt.Errorf("bad timestamp %q", s)
		}
		f, err := strconv.ParseInt((frac + "000000000")[:9], 10, 64)
		if err != nil || strings.HasPrefix(frac, "-") {
			return time.Time{}, fmt.Errorf("bad timestamp %q", s)
		}
		micros = f / 1000
	}
	t := time.Unix(n, micros*1000).UTC()
	if t.Year() < 2000 || t.Year() >= 2100 {
		return time.Time{}, fmt.Errorf("bad timestamp %q (out of range)", s)
	}
	return t, nil
}
