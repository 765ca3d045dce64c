// Package signin speaks the sign-in providers' protocols: GitHub OAuth (authorization, code
// exchange, the account, its primary email and org membership) and OpenID Connect (discovery,
// code exchange, id_token claims), PKCE, the desktop handoff's grants and callback schemes, and
// the one HTTP client every outbound sign-in call uses (no proxy, no redirects, no private or
// loopback destinations unless a test or loopback development allows them). It keeps no state:
// the OAuth transactions and grants live in persist, the routes in server. It imports persist
// (for its error type and the shapes it hands to the store).
package signin
