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
//   - Store.Snapshot: one read-only REPEATABLE READ transaction, never retried, so its fn may
//     write what it reads as it goes (a workspace export; snapshot.go, archive.go).
//   - Store.Locks: session advisory locks on a dedicated connection (locks.go).
//   - Store.Migrate and Store.Ping: the schema and the health check.
//
// Imported history (history.go, history_place.go, history_message.go) is the writer every import
// (Slack's export, Natter's own) goes through. It is the operator's tool — the caller is trusted,
// no Actor is checked — and it writes past rows as they were: original timestamps, authors who
// may be deactivated, threads, edits, reactions, pins and attachments. Its contract:
//
//   - Open a History with HistoryOpen (workspace and source, such as "slack:T024BE7LD") and call
//     the History* methods in transactions of the caller's choosing. Every record written is
//     keyed by (workspace, source, kind, source id) in import_records: asked again for a source
//     id it already wrote, a method writes nothing and answers the same id with Created false,
//     so a repeated or resumed run imports nothing twice. Two runs of the same source at once
//     meet the key and one transaction fails with conflict; run one import per source at a time.
//   - Errors: invalid_request, not_found and message_deleted come before the method's first
//     write and leave the transaction usable, so a caller may skip that record and go on; any
//     other error aborts the transaction (a caller batching records re-runs the batch one record
//     at a time to find the bad one). WithTx may run a transaction again (serialization
//     failures): keep what a batch learned only once it committed.
//   - Messages are appended: a root takes its place's next sequence (roots keep 1..last_seq
//     without gaps, which unread counts depend on), a reply its thread's next. Call
//     HistoryMessage in source order (oldest first) so sequences follow time; a message
//     imported later into a place that already has newer ones is numbered after them.
//   - Events: nothing but channel.created (one per new channel) is appended. Imported messages,
//     reactions, pins, members and conversations append no event, so sockets, bots and outgoing
//     subscriptions see no flood of old history as new; the cursor, the relay and the streams
//     stay exactly what the log says. Clients read the history through the API (pages,
//     threads, search read the tables; search's index is a generated column).
//   - Unread state: HistoryReadThrough marks a place read up to its current last sequence for the
//     people given (those who were in the conversation at the source), so old history is not a
//     wall of unread messages for them; everyone else counts it unread as any history they
//     never opened.
package persist
