-- Bots: where each bot was created, scoped tokens, setup codes, creation retry keys and command
-- menus. Bot identities themselves are rows of users (kind = 'bot').

-- One row per bot created through the API or the CLI: the workspace it was created in stays on
-- record after every membership is gone, so deleting an orphaned bot still has a workspace whose
-- managers decide.
CREATE TABLE bots (
    user_id      text PRIMARY KEY REFERENCES users (id),
    workspace_id text NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    created_by   text NOT NULL REFERENCES users (id),
    created_at   timestamptz NOT NULL
);
CREATE INDEX bots_workspace_idx ON bots (workspace_id);

-- Bearer tokens (ccb_…), stored as the SHA-256 of the raw token and bound to one workspace.
-- scopes holds concrete scopes only: bundles are expanded when the token is issued.
CREATE TABLE bot_tokens (
    id            text PRIMARY KEY,
    token_hash    bytea NOT NULL,
    bot_user_id   text NOT NULL REFERENCES users (id),
    workspace_id  text NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    owner_user_id text REFERENCES users (id),
    name          text NOT NULL,
    scopes        text[] NOT NULL,
    created_by    text NOT NULL REFERENCES users (id),
    created_at    timestamptz NOT NULL,
    last_used_at  timestamptz,
    revoked_at    timestamptz,
    CONSTRAINT bot_tokens_token_hash_key UNIQUE (token_hash)
);
CREATE INDEX bot_tokens_bot_idx ON bot_tokens (bot_user_id, workspace_id);
CREATE INDEX bot_tokens_workspace_idx ON bot_tokens (workspace_id);

-- Retry keys of bot creation (setup_nonce): a replay by the same creator in the same workspace
-- returns the same bot and, in token mode, the same token row with a fresh secret.
CREATE TABLE bot_setup_nonces (
    workspace_id text NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    created_by   text NOT NULL REFERENCES users (id),
    nonce_hash   bytea NOT NULL,
    bot_user_id  text NOT NULL REFERENCES users (id),
    token_id     text REFERENCES bot_tokens (id),
    created_at   timestamptz NOT NULL,
    PRIMARY KEY (workspace_id, created_by, nonce_hash)
);

-- Pending token grants. A code is pending while consumed_at is null and expires_at is ahead;
-- replaced and invalidated codes are deleted, consumed ones keep the token they minted.
CREATE TABLE bot_setup_codes (
    id           text PRIMARY KEY,
    code_hash    bytea NOT NULL,
    workspace_id text NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    bot_user_id  text NOT NULL REFERENCES users (id),
    token_name   text NOT NULL,
    scopes       text[] NOT NULL,
    defaults     json NOT NULL,
    created_by   text NOT NULL REFERENCES users (id),
    created_at   timestamptz NOT NULL,
    expires_at   timestamptz NOT NULL,
    consumed_at  timestamptz,
    token_id     text REFERENCES bot_tokens (id),
    CONSTRAINT bot_setup_codes_code_hash_key UNIQUE (code_hash)
);
CREATE INDEX bot_setup_codes_bot_idx ON bot_setup_codes (bot_user_id, token_name) WHERE consumed_at IS NULL;
CREATE INDEX bot_setup_codes_workspace_idx ON bot_setup_codes (workspace_id);

-- Command menus: discovery metadata a bot declares per workspace (its token's workspace).
CREATE TABLE bot_commands (
    id           text PRIMARY KEY,
    workspace_id text NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    bot_user_id  text NOT NULL REFERENCES users (id),
    command      text NOT NULL,
    description  text NOT NULL,
    args_hint    text,
    created_at   timestamptz NOT NULL,
    updated_at   timestamptz NOT NULL,
    CONSTRAINT bot_commands_command_key UNIQUE (workspace_id, bot_user_id, command)
);
