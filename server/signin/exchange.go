package signin

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"golang.org/x/oauth2"

	"github.com/natterchat/natter/persist"
)

// exchange redeems an authorization code at conf's token endpoint through golang.org/x/oauth2,
// with the PKCE verifier and the exact redirect URI, over client (the sign-in client: its address
// policy, no proxy, no redirects). Failures are provider_failed errors naming provider; the cause
// is kept for the log, never shown.
func exchange(ctx context.Context, client *http.Client, conf oauth2.Config, code, verifier, redirectURI, provider string) (*oauth2.Token, error) {
	conf.RedirectURL = redirectURI
	token, err := conf.Exchange(context.WithValue(ctx, oauth2.HTTPClient, client), code, oauth2.VerifierOption(verifier))
	if err == nil {
		return token, nil
	}
	var refused *oauth2.RetrieveError
	switch {
	case errors.As(err, &refused) && refused.Response != nil && refused.Response.StatusCode/100 == 2:
		// An answer of 200 with an error field (GitHub's way of refusing a code).
		return nil, &persist.Error{Status: http.StatusBadGateway, Code: persist.CodeProviderFailed,
			Message: fmt.Sprintf("%s refused the sign-in code (%s); start again", provider, safeWord(refused.ErrorCode)), Err: err}
	case errors.As(err, &refused) && refused.Response != nil:
		return nil, &persist.Error{Status: http.StatusBadGateway, Code: persist.CodeProviderFailed,
			Message: fmt.Sprintf("%s answered %d; try again", provider, refused.Response.StatusCode), Err: err}
	}
	var status *statusError
	if errors.As(err, &status) {
		return nil, &persist.Error{Status: http.StatusBadGateway, Code: persist.CodeProviderFailed,
			Message: fmt.Sprintf("%s answered %d; try again", provider, status.code), Err: err}
	}
	return nil, &persist.Error{Status: http.StatusBadGateway, Code: persist.CodeProviderFailed,
		Message: provider + " could not be reached or sent an answer that could not be read; try again", Err: err}
}

// authCodeURL is conf's authorization URL for one transaction: the state, the exact redirect URI
// and the S256 challenge of the transaction's verifier.
func authCodeURL(conf oauth2.Config, state, challenge, redirectURI string, extra ...oauth2.AuthCodeOption) string {
	conf.RedirectURL = redirectURI
	return conf.AuthCodeURL(state, append([]oauth2.AuthCodeOption{
		oauth2.SetAuthURLParam("code_challenge", challenge),
		oauth2.SetAuthURLParam("code_challenge_method", "S256"),
	}, extra...)...)
}
