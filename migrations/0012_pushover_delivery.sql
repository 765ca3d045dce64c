-- Pushover deliveries back off per person after a failure, like a web push device.
ALTER TABLE users
    ADD COLUMN pushover_failure_count integer NOT NULL DEFAULT 0,
    ADD COLUMN pushover_backoff_until timestamptz;
