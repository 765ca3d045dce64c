package persist

import (
	"context"
	"crypto/subtle"
	"time"
)

// OAuth sign-in providers, as stored on transactions and identities.
const (
	ProviderGitHub = "github"
	ProviderOIDC   = "oidc"
)

// Lifetimes of the OAuth sign-in records (§Limits).
const (
	// OAuthTransactionLifetime is how long a started sign-in waits for its callback.
	OAuthTransactionLifetime = 10 * time.Minute
	// DesktopGrantLifetime is how long a completed desktop sign-in waits for the app to redeem it.
	DesktopGrantLifetime = 5 * time.Minute
)

// OAuthLimits bound the pending OAuth sign-in records, so abandoned or hostile starts cannot grow
// the tables without end. A start or grant beyond a limit is refused with over_capacity (503).
type OAuthLimits struct {
	// Transactions is the number of pending transactions across all browsers. Default 8,192.
	Transactions int
	// PerBinding is the number of pending transactions of one browser binding. Default 8.
	PerBinding int
	// PerAddress is the number of pending transactions started from one client address, so
	// that one source, which need not send a binding cookie, cannot fill the instance's
	// Transactions. Default 64.
	PerAddress int
	// DesktopGrants is the number of completed desktop sign-ins awaiting redemption. Default 4,096.
	DesktopGrants int
}

// DefaultOAuthLimits are the limits of the spec.
var DefaultOAuthLimits = OAuthLimits{Transactions: 8192, PerBinding: 8, PerAddress: 64, DesktopGrants: 4096}

// WithDefaults fills zero fields from DefaultOAuthLimits.
func (l OAuthLimits) WithDefaults() OAuthLimits {
	if l.Transactions <= 0 {
		l.Transactions = DefaultOAuthLimits.Transactions
	}
	if l.PerBinding <= 0 {
		l.PerBinding = DefaultOAuthLimits.PerBinding
	}
	if l.PerAddress <= 0 {
		l.PerAddress = DefaultOAuthLimits.PerAddress
	}
	if l.DesktopGrants <= 0 {
		l.DesktopGrants = DefaultOAuthLimits.DesktopGrants
	}
	return l
}

// oauthStartLock serialises the capacity check and insert of OAuth starts ("natter-oa"), so the
// limits hold exactly under concurrent starts.
const oauthStartLock int64 = 0x6e61747465726f61

// oauthGrantLock does the same for desktop grants ("natter-og").
const oauthGrantLock int64 = 0x6e61747465726f67

// OAuthStart is a sign-in about to leave for its provider. State and Binding are the raw values
// the browser holds; only their hashes are stored.
type OAuthStart struct {
	Provider string
	State    string
	Binding  string
	// Client is the client address that starts it (the key the sign-in budgets use); only its
	// hash is stored.
	Client      string
	Verifier    string // the PKCE verifier the callback sends to the provider
	RedirectURI string // the exact callback URL sent to the provider
	// DesktopChallenge and DesktopProtocol are set for a desktop handoff: the app's SHA-256 code
	// challenge and its protocol version (1 or 2).
	DesktopChallenge string
	DesktopProtocol  int
}

// OAuthTransaction is a consumed sign-in, as its callback needs it.
type OAuthTransaction struct {
	Provider         string
	Verifier         string
	RedirectURI      string
	DesktopChallenge string
	DesktopProtocol  int // 0 for a browser sign-in
}

// OAuthTransactionStart records a pending sign-in valid for OAuthTransactionLifetime. Expired
// transactions are removed first. A refusal carries RetryAfter: when the oldest of the pending
// sign-ins that fill the limit expires. Codes: over_capacity (the instance, this browser binding
// or this client address has as many pending sign-ins as limits allow).
func (tx *Tx) OAuthTransactionStart(ctx context.Context, p OAuthStart, limits OAuthLimits) error {
	limits = limits.WithDefaults()
	if _, err := tx.exec(ctx, `SELECT pg_advisory_xact_lock($1)`, oauthStartLock); err != nil {
		return err
	}
	if _, err := tx.exec(ctx, `DELETE FROM oauth_transactions WHERE expires_at <= $1`, tx.now); err != nil {
		return err
	}
	binding, client := HashSecret(p.Binding), HashSecret(p.Client)
	var total, mine, fromClient int
	var oldest, oldestMine, oldestFromClient *time.Time
	if err := tx.queryRow(ctx, `SELECT count(*), count(*) FILTER (WHERE binding_hash = $1),
			count(*) FILTER (WHERE client_hash = $2), min(expires_at),
			min(expires_at) FILTER (WHERE binding_hash = $1), min(expires_at) FILTER (WHERE client_hash = $2)
		FROM oauth_transactions`, binding, client).Scan(&total, &mine, &fromClient, &oldest, &oldestMine, &oldestFromClient); err != nil {
		return err
	}
	full := func(expires *time.Time, format string, args ...any) error {
		e := Errorf(CodeOverCapacity, format, args...)
		if expires != nil {
			e.RetryAfter = expires.Sub(tx.now)
		}
		return e
	}
	if total >= limits.Transactions {
		return full(oldest, "too many sign-ins are pending on this server; try again in a few minutes")
	}
	if mine >= limits.PerBinding {
		return full(oldestMine, "this browser has %d sign-ins pending; finish one or try again in a few minutes", mine)
	}
	if fromClient >= limits.PerAddress {
		return full(oldestFromClient, "%d sign-ins started from this address are pending; finish one or try again in a few minutes", fromClient)
	}
	var challenge *string
	var protocol *int
	if p.DesktopChallenge != "" {
		challenge, protocol = &p.DesktopChallenge, &p.DesktopProtocol
	}
	_, err := tx.exec(ctx, `INSERT INTO oauth_transactions (state_hash, binding_hash, provider, code_verifier,
			redirect_uri, desktop_challenge, desktop_protocol, created_at, expires_at, client_hash)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`,
		HashSecret(p.State), binding, p.Provider, p.Verifier, p.RedirectURI, challenge, protocol, tx.now,
		tx.now.Add(OAuthTransactionLifetime), client)
	return err
}

// OAuthTransactionConsume spends a pending sign-in of provider: only when the state is known and
// unexpired and the browser binding is the one that started it. A binding that does not match
// leaves the transaction for the browser that owns it. Unknown, used, expired and foreign states
// all give the same error. Codes: invalid_request.
func (tx *Tx) OAuthTransactionConsume(ctx context.Context, provider, state, binding string) (OAuthTransaction, error) {
	t := OAuthTransaction{Provider: provider}
	var challenge *string
	var protocol *int
	err := tx.queryRow(ctx, `DELETE FROM oauth_transactions
		WHERE state_hash = $1 AND binding_hash = $2 AND provider = $3 AND expires_at > $4
		RETURNING code_verifier, redirect_uri, desktop_challenge, desktop_protocol`,
		HashSecret(state), HashSecret(binding), provider, tx.now).Scan(&t.Verifier, &t.RedirectURI, &challenge, &protocol)
	if err != nil {
		if e := notFoundAs(err, "sign-in"); e != err {
			return OAuthTransaction{}, Invalid("this sign-in is unknown, already used, expired, or was started in another browser; start again")
		}
		return OAuthTransaction{}, err
	}
	if challenge != nil && protocol != nil {
		t.DesktopChallenge, t.DesktopProtocol = *challenge, *protocol
	}
	return t, nil
}

// DesktopGrant asks a sign-in to end in a desktop grant instead of a browser session.
type DesktopGrant struct {
	// Grant is the raw one-time grant the app receives in its callback URL; only its hash is stored.
	Grant string
	// Challenge is the app's SHA-256 code challenge; redemption must present its verifier.
	Challenge string
	Limits    OAuthLimits
}

// desktopGrantCreate records a completed desktop sign-in of userID, redeemable for
// DesktopGrantLifetime. Expired grants are removed first. Codes: over_capacity.
func (tx *Tx) desktopGrantCreate(ctx context.Context, userID string, g DesktopGrant) error {
	limits := g.Limits.WithDefaults()
	if _, err := tx.exec(ctx, `SELECT pg_advisory_xact_lock($1)`, oauthGrantLock); err != nil {
		return err
	}
	if _, err := tx.exec(ctx, `DELETE FROM oauth_desktop_grants WHERE expires_at <= $1`, tx.now); err != nil {
		return err
	}
	var pending int
	if err := tx.queryRow(ctx, `SELECT count(*) FROM oauth_desktop_grants`).Scan(&pending); err != nil {
		return err
	}
	if pending >= limits.DesktopGrants {
		return Errorf(CodeOverCapacity, "too many desktop sign-ins are waiting to be redeemed; try again in a few minutes")
	}
	_, err := tx.exec(ctx, `INSERT INTO oauth_desktop_grants (grant_hash, user_id, challenge, created_at, expires_at)
		VALUES ($1, $2, $3, $4, $5)`, HashSecret(g.Grant), userID, g.Challenge, tx.now, tx.now.Add(DesktopGrantLifetime))
	return err
}

// SignedIn is the outcome of a sign-in that created a session: the user, the session and its raw
// token. A desktop sign-in that produced a grant has only User.
type SignedIn struct {
	User    User
	Session Session
	Token   string
}

// DesktopGrantConsume redeems a desktop grant: it is deleted (single use) when it is unexpired and
// challenge is its code challenge, and a session of method github starts for its user. A wrong
// verifier leaves the grant for the app that holds the right one. Unknown, used, expired and
// mismatched grants all give the same error. Codes: invalid_request.
func (tx *Tx) DesktopGrantConsume(ctx context.Context, grant, challenge string) (SignedIn, error) {
	var userID, stored string
	err := tx.queryRow(ctx, `SELECT user_id, challenge FROM oauth_desktop_grants
		WHERE grant_hash = $1 AND expires_at > $2 FOR UPDATE`, HashSecret(grant), tx.now).Scan(&userID, &stored)
	refused := Invalid("the desktop grant is unknown, already used, expired, or does not match the code verifier; sign in again")
	if err != nil {
		if e := notFoundAs(err, "grant"); e != err {
			return SignedIn{}, refused
		}
		return SignedIn{}, err
	}
	if subtle.ConstantTimeCompare([]byte(stored), []byte(challenge)) != 1 {
		return SignedIn{}, refused
	}
	if _, err := tx.exec(ctx, `DELETE FROM oauth_desktop_grants WHERE grant_hash = $1`, HashSecret(grant)); err != nil {
		return SignedIn{}, err
	}
	u, err := tx.UserGet(ctx, userID)
	if err != nil {
		return SignedIn{}, err
	}
	s, token, err := tx.SessionCreate(ctx, userID, MethodGitHub)
	if err != nil {
		return SignedIn{}, err
	}
	return SignedIn{User: u, Session: s, Token: token}, nil
}
