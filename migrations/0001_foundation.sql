-- Foundation: identity, sessions, magic links, the workspace skeleton and the event log.

CREATE TABLE instance_settings (
    key   text PRIMARY KEY,
    value text NOT NULL
);

CREATE TABLE users (
    id                text PRIMARY KEY,
    kind              text NOT NULL DEFAULT 'human' CHECK (kind IN ('human', 'bot')),
    owner_user_id     text REFERENCES users (id),
    display_name      text NOT NULL,
    handle            text,
    former_handle     text,
    email             text,
    avatar_url        text,
    pushover_enabled  boolean NOT NULL DEFAULT false,
    pushover_user_key text,
    password_hash     text,
    created_at        timestamptz NOT NULL,
    updated_at        timestamptz NOT NULL,
    deleted_at        timestamptz,
    CONSTRAINT users_owner_only_for_bots CHECK (owner_user_id IS NULL OR kind = 'bot')
);
CREATE UNIQUE INDEX users_handle_key ON users (handle) WHERE handle IS NOT NULL;
CREATE UNIQUE INDEX users_email_key ON users (email) WHERE email IS NOT NULL;
CREATE INDEX users_owner_idx ON users (owner_user_id) WHERE owner_user_id IS NOT NULL;

CREATE TABLE sessions (
    id           text PRIMARY KEY,
    user_id      text NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    token_hash   bytea NOT NULL,
    method       text NOT NULL,
    created_at   timestamptz NOT NULL,
    expires_at   timestamptz NOT NULL,
    revoked_at   timestamptz,
    CONSTRAINT sessions_token_hash_key UNIQUE (token_hash)
);
CREATE INDEX sessions_user_idx ON sessions (user_id);

CREATE TABLE magic_links (
    token_hash   bytea PRIMARY KEY,
    email        text NOT NULL,
    display_name text NOT NULL DEFAULT '',
    created_at   timestamptz NOT NULL,
    expires_at   timestamptz NOT NULL,
    consumed_at  timestamptz
);

CREATE TABLE workspaces (
    id             text PRIMARY KEY,
    route_id       text NOT NULL,
    name           text NOT NULL,
    slug           text NOT NULL,
    icon_upload_id text,
    created_by     text REFERENCES users (id),
    created_at     timestamptz NOT NULL,
    updated_at     timestamptz NOT NULL,
    CONSTRAINT workspaces_route_id_key UNIQUE (route_id),
    CONSTRAINT workspaces_slug_key UNIQUE (slug)
);

CREATE TABLE workspace_members (
    workspace_id    text NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    user_id         text NOT NULL REFERENCES users (id),
    role            text NOT NULL CHECK (role IN ('owner', 'moderator', 'member', 'guest', 'bot')),
    joined_at       timestamptz NOT NULL,
    join_seq        bigint GENERATED ALWAYS AS IDENTITY,
    timeout_until   timestamptz,
    blocked_at      timestamptz,
    moderation_note text,
    PRIMARY KEY (workspace_id, user_id)
);
CREATE INDEX workspace_members_user_idx ON workspace_members (user_id);

CREATE TABLE channels (
    id               text PRIMARY KEY,
    route_id         text NOT NULL,
    workspace_id     text NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    name             text NOT NULL,
    display_title    text,
    kind             text NOT NULL DEFAULT 'public',
    archived_at      timestamptz,
    external_managed boolean NOT NULL DEFAULT false,
    external_ref     text,
    external_url     text,
    sidebar_section  text,
    created_by       text REFERENCES users (id),
    created_at       timestamptz NOT NULL,
    updated_at       timestamptz NOT NULL,
    last_seq         bigint NOT NULL DEFAULT 0,
    CONSTRAINT channels_route_id_key UNIQUE (route_id),
    CONSTRAINT channels_workspace_name_key UNIQUE (workspace_id, name)
);

-- One row per workspace: the counter that hands out event cursors. Locking it in the mutation's
-- transaction makes cursor order equal commit order and the sequence gapless.
CREATE TABLE event_heads (
    workspace_id text PRIMARY KEY REFERENCES workspaces (id) ON DELETE CASCADE,
    last_cursor  bigint NOT NULL DEFAULT 0
);

CREATE TABLE events (
    workspace_id           text NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    cursor                 bigint NOT NULL,
    id                     text NOT NULL,
    type                   text NOT NULL,
    channel_id             text,
    direct_conversation_id text,
    message_id             text,
    seq                    bigint,
    actor_id               text,
    created_at             timestamptz NOT NULL,
    payload                json NOT NULL,
    PRIMARY KEY (workspace_id, cursor),
    CONSTRAINT events_id_key UNIQUE (id)
);
