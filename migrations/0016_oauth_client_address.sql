-- Pending OAuth sign-ins remember the client address that started them (a SHA-256 of the peer
-- IP, or of its /64 for IPv6), so that one source can hold only a bounded share of the pending
-- transactions (issue 22, defect 2). Rows started before this migration have none and expire
-- within ten minutes.
ALTER TABLE oauth_transactions ADD COLUMN client_hash bytea;
