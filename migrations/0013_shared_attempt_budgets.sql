-- Attempt budgets (password logins, setup-code claims) kept in the database, so that every
-- replica spends from the same budget: N replicas must not allow N times the guesses.
-- Each (budget, key) is a token bucket kept as the time it is full again (GCRA): an attempt
-- moves full_at one interval (window / budget) later, and is allowed while full_at stays within
-- one window of now. The key is a SHA-256 of the client address or account identifier, so the
-- table holds no address or email in clear.
CREATE TABLE attempt_budgets (
    budget   text        NOT NULL,
    key_hash bytea       NOT NULL,
    full_at  timestamptz NOT NULL,
    PRIMARY KEY (budget, key_hash)
);

-- Buckets full again are deleted by age: forgetting them changes nothing.
CREATE INDEX attempt_budgets_full_at ON attempt_budgets (full_at);
