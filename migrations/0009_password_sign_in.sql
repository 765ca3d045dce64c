-- Password sign-in: the per-account budget of wrong current passwords on change.

-- One row per password-change attempt that is in flight or ended with a wrong current
-- password. A row is written before the (slow) verification and removed when the attempt ends
-- any other way, so concurrent attempts cannot overrun the budget; rows older than the window
-- are deleted as new attempts arrive.
CREATE TABLE password_change_attempts (
    id         text PRIMARY KEY,
    user_id    text NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    started_at timestamptz NOT NULL
);
CREATE INDEX password_change_attempts_user_idx ON password_change_attempts (user_id, started_at);
