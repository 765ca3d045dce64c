package persist

// Relaxed-commit writes. A few writes are made on every request and their loss in a crash costs
// only staleness: the time a bot token was last used (Store.BotTokenAuthenticate) and what a
// workspace's stream holds (Store.RelayPositionSet and Store.RelayStreamCreated, which the relay
// checks against the stream before its first pass anyway). Each is one statement on the pool, outside any transaction,
// whose implicit commit does not wait for the disk: one round trip and no WAL flush, where a
// transaction took three or four round trips and a flush.

// relaxedCommit is a CTE for a single write statement run outside a transaction (poolReader)
// whose loss in a crash costs nothing but staleness: set_config(…, true) turns
// synchronous_commit off for the statement's own implicit transaction, whose commit comes after
// it, so that commit does not wait for the disk. The statement must read from "relaxed" for the
// CTE to be evaluated.
const relaxedCommit = `relaxed AS (SELECT set_config('synchronous_commit', 'off', true))`
