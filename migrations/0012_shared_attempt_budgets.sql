-- Attempt budgets (password logins, setup-code claims) kept in the database, so that every
-- replica spends from the same budget: N replicas must not allow N times the guesses.
-- One fixed window per (budget, key); the key is a SHA-256 of the client address or account
-- identifier, so the table holds no address or email in clear.
CREATE TABLE attempt_budgets (
    budget       text        NOT NULL,
    key_hash     bytea       NOT NULL,
    window_start timestamptz NOT NULL,
    attempts     integer     NOT NULL,
    PRIMARY KEY (budget, key_hash)
);

-- Finished windows are deleted by age.
CREATE INDEX attempt_budgets_window_start ON attempt_budgets (window_start);
