package push

import (
	"encoding/base64"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/require"

	"github.com/natterchat/natter/outbound"
	"github.com/natterchat/natter/persist"
)

func TestParseSubscription(t *testing.T) {
	t.Parallel()
	key, err := GenerateKey() // any P-256 point will do as a browser key
	require.NoError(t, err)
	point := key.PublicKey
	raw, _ := base64.RawURLEncoding.DecodeString(point)
	secret := base64.RawURLEncoding.EncodeToString([]byte("0123456789abcdef"))
	for _, tc := range []struct {
		name, endpoint, p256dh, auth string
		ok                           bool
	}{
		{"Valid", "https://fcm.googleapis.com/fcm/send/abc", point, secret, true},
		{"PaddedAndStandardBase64", "https://push.example.com/x", base64.StdEncoding.EncodeToString(raw),
			base64.URLEncoding.EncodeToString([]byte("0123456789abcdef")), true},
		{"PublicAddressLiteral", "https://93.184.216.34/push", point, secret, true},
		{"PlainHTTP", "http://push.example.com/x", point, secret, false},
		{"NotAURL", "push.example.com/x", point, secret, false},
		{"Empty", "", point, secret, false},
		{"Loopback", "https://127.0.0.1/x", point, secret, false},
		{"PrivateAddress", "https://10.0.0.8/x", point, secret, false},
		{"LinkLocal", "https://[fe80::1]/x", point, secret, false},
		{"Localhost", "https://localhost/x", point, secret, false},
		{"LocalSuffix", "https://push.localhost/x", point, secret, false},
		{"InternalName", "https://push.corp.internal/x", point, secret, false},
		{"SingleLabel", "https://pushhost/x", point, secret, false},
		{"Credentials", "https://user:pw@push.example.com/x", point, secret, false},
		{"TooLong", "https://push.example.com/" + strings.Repeat("a", MaxEndpointLength), point, secret, false},
		{"KeyNotAPoint", "https://push.example.com/x", base64.RawURLEncoding.EncodeToString(make([]byte, 65)), secret, false},
		{"KeyCompressed", "https://push.example.com/x", base64.RawURLEncoding.EncodeToString(raw[:33]), secret, false},
		{"KeyNotBase64", "https://push.example.com/x", "!!!", secret, false},
		{"AuthShort", "https://push.example.com/x", point, base64.RawURLEncoding.EncodeToString([]byte("short")), false},
		{"AuthLong", "https://push.example.com/x", point, base64.RawURLEncoding.EncodeToString(make([]byte, 17)), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			sub, err := ParseSubscription(tc.endpoint, tc.p256dh, tc.auth, " Firefox ", outbound.PublicOnly)
			if !tc.ok {
				e, ok := persist.ErrorOf(err)
				require.True(t, ok, "%v", err)
				require.Equal(t, persist.CodeInvalidRequest, e.Code)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.endpoint, sub.Endpoint)
			require.Equal(t, point, sub.P256dh, "keys come back as unpadded base64url")
			require.Equal(t, secret, sub.Auth)
			require.Equal(t, "Firefox", sub.Label)
		})
	}
	_, err = ParseSubscription("https://127.0.0.1:8443/x", point, secret, "", outbound.PublicOrLoopback)
	require.NoError(t, err, "the policy is injectable")
}

func TestRetryAfter(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		header string
		want   time.Duration
	}{
		{"", 0},
		{"120", 2 * time.Minute},
		{" 7200 ", 2 * time.Hour},
		{"0", 0},
		{"-5", 0},
		{"soon", 0},
		{now.Add(3 * time.Hour).Format(http.TimeFormat), 3 * time.Hour},
		{now.Add(-time.Hour).Format(http.TimeFormat), 0},
		{"99999999999999", 365 * 24 * time.Hour},
	} {
		require.Equal(t, tc.want, retryAfter(tc.header, now), "%q", tc.header)
	}
}

func TestTitleAndURL(t *testing.T) {
	t.Parallel()
	require.Equal(t, "Ada in #general", Title("Ada", "general"))
	require.Equal(t, "Ada", Title("Ada", ""), "a direct conversation shows the author")
	require.Equal(t, "Someone in #general", Title("  ", "general"), "a fixed word for an author without a name")
	require.Equal(t, maxTitleChars, utf8.RuneCountInString(Title(strings.Repeat("é", 200), "general")))
	require.Equal(t, "/TW/CX", URL(persist.PushMessage{WorkspaceRouteID: "TW", PlaceRouteID: "CX"}))
	require.Equal(t, "/TW/MR", URL(persist.PushMessage{WorkspaceRouteID: "TW", PlaceRouteID: "CX", ThreadRouteID: "MR"}),
		"a reply links to its thread")
}

func TestPayloadEncode(t *testing.T) {
	t.Parallel()
	short := Payload{UserID: "usr_1", Title: "Ada in #general", Body: "hello", Tag: "msg_1", URL: "/T/C"}
	raw, err := short.Encode()
	require.NoError(t, err)
	require.JSONEq(t, `{"user_id":"usr_1","title":"Ada in #general","body":"hello","tag":"msg_1","url":"/T/C"}`, string(raw))

	// The worst case: every character of a long body and title escapes to six bytes.
	worst := Payload{UserID: "usr_01jzzzzzzzzzzzzzzzzzzzzzzz", Title: strings.Repeat("<", 1000),
		Body: strings.Repeat("\u0001", 40000), Tag: "msg_01jzzzzzzzzzzzzzzzzzzzzzzz", URL: "/TAAAAAAAAAAAAAAAA/MAAAAAAAAAAAAAAAA"}
	raw, err = worst.Encode()
	require.NoError(t, err)
	require.Less(t, len(raw), MaxPayload)
	var back Payload
	require.NoError(t, json.Unmarshal(raw, &back))
	require.Equal(t, MaxBodyChars, utf8.RuneCountInString(back.Body), "the body is cut to 240 characters")
	require.True(t, strings.HasSuffix(back.Body, "…"))

	exact := Payload{Body: strings.Repeat("x", MaxBodyChars)}
	raw, err = exact.Encode()
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(raw, &back))
	require.Equal(t, exact.Body, back.Body, "240 characters are kept whole")
}
