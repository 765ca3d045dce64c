-- OAuth sign-in (GitHub and OIDC): pending browser transactions, desktop handoff grants and the
-- external identities GitHub accounts are matched by.

-- A pending sign-in, from start to callback. State and browser binding are stored only as SHA-256
-- hashes; the PKCE verifier is kept because the callback sends it to the provider. A row is
-- deleted when its callback consumes it (single use) or, once expired, by a later start.
CREATE TABLE oauth_transactions (
    state_hash        bytea PRIMARY KEY,
    binding_hash      bytea NOT NULL,
    provider          text NOT NULL CHECK (provider IN ('github', 'oidc')),
    code_verifier     text NOT NULL,
    redirect_uri      text NOT NULL,
    -- The desktop app's SHA-256 code challenge and handoff protocol, for desktop starts only.
    desktop_challenge text,
    desktop_protocol  smallint CHECK (desktop_protocol IN (1, 2)),
    created_at        timestamptz NOT NULL,
    expires_at        timestamptz NOT NULL,
    CONSTRAINT oauth_transactions_desktop CHECK ((desktop_challenge IS NULL) = (desktop_protocol IS NULL))
);
CREATE INDEX oauth_transactions_binding_idx ON oauth_transactions (binding_hash);
CREATE INDEX oauth_transactions_expires_idx ON oauth_transactions (expires_at);

-- A completed desktop sign-in waiting for the app to redeem it with its PKCE verifier. The grant
-- is stored only as a SHA-256 hash and deleted when redeemed (single use).
CREATE TABLE oauth_desktop_grants (
    grant_hash  bytea PRIMARY KEY,
    user_id     text NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    challenge   text NOT NULL,
    created_at  timestamptz NOT NULL,
    expires_at  timestamptz NOT NULL
);
CREATE INDEX oauth_desktop_grants_expires_idx ON oauth_desktop_grants (expires_at);

-- An external account bound to a user. Accounts are matched only by (provider, provider_user_id),
-- never by email. display_name is the name the provider last reported, so a later sign-in can
-- tell a name the user edited (kept) from one the provider set (refreshed).
CREATE TABLE user_identities (
    provider         text NOT NULL,
    provider_user_id text NOT NULL,
    user_id          text NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    login            text NOT NULL DEFAULT '',
    email            text,
    display_name     text NOT NULL DEFAULT '',
    created_at       timestamptz NOT NULL,
    updated_at       timestamptz NOT NULL,
    PRIMARY KEY (provider, provider_user_id)
);
CREATE INDEX user_identities_user_idx ON user_identities (user_id);
