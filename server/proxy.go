package server

import (
	"net/http"
	"strings"

	"github.com/natterchat/natter/persist"
	"github.com/natterchat/natter/server/accessproxy"
)

// proxyAssertion is the identity-proxy assertion a request carries, "" when it carries none or
// when identity-proxy sign-in is off (the header is then ignored).
func (s *Server) proxyAssertion(r *http.Request) string {
	if s.proxy == nil {
		return ""
	}
	return strings.TrimSpace(r.Header.Get(accessproxy.Header))
}

// proxyCaller verifies an identity-proxy assertion and signs its person in: the account is found
// or created by email, joined to the default workspace, and given a session, whose token the
// response sets as the cookie so that later requests skip the assertion. A refused assertion is
// 401; the reason goes to the log only. An unsafe request that fails the CSRF rule is refused
// before anything is verified or written.
func (s *Server) proxyCaller(r *http.Request, assertion string) (*Caller, error) {
	if err := s.checkCSRF(r, &Caller{Via: viaProxy}); err != nil {
		return nil, err
	}
	ctx := r.Context()
	id, err := s.proxy.Verify(ctx, assertion)
	if err != nil {
		s.logger.Info("identity-proxy assertion refused", "reason", err.Error(), "correlation_id", correlationID(ctx))
		return nil, persist.Errorf(persist.CodeUnauthenticated, "the identity-proxy assertion is not valid")
	}
	type result struct {
		user    persist.User
		session persist.Session
		token   string
	}
	res, err := persist.WithTxV(ctx, s.store, func(tx *persist.Tx) (result, error) {
		u, sess, token, err := tx.ProxySignIn(ctx, id.Email)
		return result{u, sess, token}, err
	})
	if e, ok := persist.ErrorOf(err); ok && e.Code == persist.CodeInvalidRequest {
		return nil, persist.Errorf(persist.CodeUnauthenticated, "the identity-proxy assertion names no usable email address")
	}
	if err != nil {
		return nil, err
	}
	return &Caller{User: res.user, Session: &res.session, Via: viaProxy, issuedToken: res.token}, nil
}
