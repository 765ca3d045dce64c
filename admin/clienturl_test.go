package admin

import (
	"net"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestClientURL(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, public, addr, want string
	}{
		{"Loopback", "", "127.0.0.1:8080", "http://127.0.0.1:8080"},
		{"WildcardShownAsLoopback", "", "0.0.0.0:8080", "http://127.0.0.1:8080"},
		{"IPv6Wildcard", "", "[::]:9000", "http://127.0.0.1:9000"},
		{"PublicURLWins", "https://chat.example.com/", "0.0.0.0:8080", "https://chat.example.com"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			addr, err := net.ResolveTCPAddr("tcp", tc.addr)
			require.NoError(t, err)
			require.Equal(t, tc.want, clientURL(tc.public, addr))
		})
	}
}
