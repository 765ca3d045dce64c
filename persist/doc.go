// Package persist is Natter's Postgres layer (pgx/v5): the pool, the transactions, one file per
// resource, and the event writer. It is the final guard for membership, role and guest rules:
// every check runs inside the transaction of the write it guards, and every statement on
// workspace data filters by workspace_id. It imports only migrations.
//
// Every statement is a method of *Tx or *Reader, and those come only from the store's entry
// points, each for one way of reaching the database:
//
//   - Store.WithTx and WithTxV: a transaction, retried on serialization failures and deadlocks
//     (tx.go).
//   - ReadV: the hot read-only checks without a transaction, each statement on its own on the
//     pool; the Reader it hands out cannot write (tx.go).
//   - Batch, BatchInPlace, BatchOnMessage and BatchMessageCreate: a mutation in its workspace's
//     group commit, one transaction for the requests that arrive while the previous one is in
//     flight, each under its own savepoint (groupcommit.go; the group's transaction, which sends
//     BEGIN and COMMIT with its statements, and its statement primitives in grouptx.go; the
//     statements a post sends ahead in sendahead.go).
//   - Store.BotTokenAuthenticate and Store.RelayPositionSet: one write statement outside any
//     transaction whose commit does not wait for the disk (relaxedcommit.go).
//   - Store.RelayStreamCreated, RelayIdle, RelayStreamRetired and RelayStreamKept: the relay's
//     bookkeeping of its streams, one statement each on the pool (relay.go).
//   - Store.Locks: session advisory locks on a dedicated connection (locks.go).
//   - Store.Migrate and Store.Ping: the schema and the health check.
package persist
