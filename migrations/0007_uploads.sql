-- Uploads: file metadata (the bytes live in the upload store under storage_key), the join to
-- messages, and the queue of objects to delete after a workspace is deleted.

-- One uploaded file. storage_key is upload-<random>, never the filename. nonce is the uploader's
-- idempotency key: (owner_id, nonce) is unique, whatever the workspace, so a nonce reused in
-- another workspace is a conflict.
CREATE TABLE uploads (
    id           text PRIMARY KEY,
    workspace_id text NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    owner_id     text NOT NULL REFERENCES users (id),
    nonce        text,
    storage_key  text NOT NULL,
    filename     text NOT NULL,
    content_type text NOT NULL,
    byte_size    bigint NOT NULL CHECK (byte_size >= 0),
    sha256       bytea NOT NULL,
    width        integer CHECK (width >= 0),
    height       integer CHECK (height >= 0),
    created_at   timestamptz NOT NULL,
    CONSTRAINT uploads_storage_key_key UNIQUE (storage_key),
    CONSTRAINT uploads_owner_nonce_key UNIQUE (owner_id, nonce)
);
CREATE INDEX uploads_workspace_idx ON uploads (workspace_id);

-- An upload attached to a message (at create, or later by its author). A message lists its
-- attachments in the order they were attached.
CREATE TABLE message_attachments (
    message_id   text NOT NULL REFERENCES messages (id) ON DELETE CASCADE,
    upload_id    text NOT NULL REFERENCES uploads (id) ON DELETE CASCADE,
    workspace_id text NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    attached_by  text NOT NULL REFERENCES users (id),
    created_at   timestamptz NOT NULL,
    PRIMARY KEY (message_id, upload_id)
);
CREATE INDEX message_attachments_upload_idx ON message_attachments (upload_id);

-- Upload objects whose metadata is gone (their workspace was deleted), written in the deleting
-- transaction and removed once the object is deleted from the store. No foreign key: the
-- workspace no longer exists when the row is read.
CREATE TABLE upload_deletions (
    storage_key  text PRIMARY KEY,
    workspace_id text NOT NULL,
    queued_at    timestamptz NOT NULL,
    attempts     integer NOT NULL DEFAULT 0,
    last_error   text
);

-- A workspace icon is an upload of the same workspace.
ALTER TABLE workspaces ADD CONSTRAINT workspaces_icon_upload_fk
    FOREIGN KEY (icon_upload_id) REFERENCES uploads (id) ON DELETE SET NULL;
