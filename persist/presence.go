package persist

import (
	"cmp"
	"context"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
)

// Presence (docs/realtime.md, "Presence"): a person is online in a workspace while at least
// one of their sockets is open on any replica. Each replica records which people it holds
// sockets of (presence_sockets) under a registration it keeps alive (presence_replicas); a
// per-person count of replicas (presence_users) turns those into transitions, serialised by
// the count's row lock and ordered by a version from one sequence.

// PresenceKey is a person in a workspace.
type PresenceKey struct {
	WorkspaceID string
	UserID      string
}

// PresenceChange is a person coming online or going offline in a workspace. Version orders the
// changes of one person: of two, the higher is the later.
type PresenceChange struct {
	PresenceKey
	Online  bool
	Version int64
}

// OnlineMember is an entry of a workspace's online set.
type OnlineMember struct {
	UserID  string `json:"user_id"`
	Online  bool   `json:"online"`
	Version int64  `json:"version"`
}

// PresenceFlush records replica's changes since its last flush: the people it now holds a
// socket of (add) and those it no longer does (remove), and keeps its registration alive until
// ttl from now. It returns the transitions the changes made. lost reports that the replica's
// registration had expired (another replica took its rows away): its rows are only those of
// this call's adds, and the caller must add again everyone it holds. Presence is staleness
// only: its commits do not wait for the disk.
func (s *Store) PresenceFlush(ctx context.Context, replicaID string, ttl time.Duration, add, remove []PresenceKey) (changes []PresenceChange, lost bool, err error) {
	err = s.WithTx(ctx, func(tx *Tx) error {
		changes, lost = nil, false
		if _, err := tx.exec(ctx, `SET LOCAL synchronous_commit TO off`); err != nil {
			return err
		}
		// The registration's row lock keeps a sweeper from expiring this replica while it
		// writes; a registration already swept is made again, with nothing under it.
		tag, err := tx.exec(ctx, `UPDATE presence_replicas SET expires_at = now() + $2 * interval '1 millisecond' WHERE id = $1`,
			replicaID, ttl.Milliseconds())
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			lost = true
			if _, err := tx.exec(ctx, `INSERT INTO presence_replicas (id, expires_at) VALUES ($1, now() + $2 * interval '1 millisecond')`,
				replicaID, ttl.Milliseconds()); err != nil {
				return err
			}
		}
		if len(add) > 0 {
			ws, users := presenceColumns(add)
			// Rows are counted in key order, so two replicas' batches take their locks in the same order.
			rows, err := tx.query(ctx, `
				WITH added AS (
					INSERT INTO presence_sockets (replica_id, workspace_id, user_id)
					SELECT $1, w, u FROM unnest($2::text[], $3::text[]) AS t(w, u)
					ON CONFLICT DO NOTHING
					RETURNING workspace_id, user_id)
				INSERT INTO presence_users AS p (workspace_id, user_id, replicas, version)
				SELECT workspace_id, user_id, 1, nextval('presence_version') FROM added ORDER BY 1, 2
				ON CONFLICT (workspace_id, user_id) DO UPDATE
					SET replicas = p.replicas + 1, version = nextval('presence_version')
				RETURNING workspace_id, user_id, replicas, version`, replicaID, ws, users)
			if err != nil {
				return err
			}
			if changes, err = scanPresence(rows, changes, func(n int) bool { return n == 1 }); err != nil {
				return err
			}
		}
		if len(remove) > 0 {
			ws, users := presenceColumns(remove)
			rows, err := tx.query(ctx, `
				WITH gone AS (
					DELETE FROM presence_sockets s USING unnest($2::text[], $3::text[]) AS t(w, u)
					WHERE s.replica_id = $1 AND s.workspace_id = t.w AND s.user_id = t.u
					RETURNING s.workspace_id, s.user_id)
				UPDATE presence_users p SET replicas = p.replicas - 1, version = nextval('presence_version')
				FROM gone WHERE p.workspace_id = gone.workspace_id AND p.user_id = gone.user_id
				RETURNING p.workspace_id, p.user_id, p.replicas, p.version`, replicaID, ws, users)
			if err != nil {
				return err
			}
			if changes, err = scanPresence(rows, changes, func(n int) bool { return n <= 0 }); err != nil {
				return err
			}
			return tx.presenceDropOffline(ctx, changes)
		}
		return nil
	})
	return changes, lost, err
}

// PresenceSweep expires the registrations of replicas that stopped renewing them (a crash, a
// lost network, a shutdown) and takes their rows away, returning the people who went offline
// with them. Each expired replica is swept once: the first sweeper locks it, the others skip it.
func (s *Store) PresenceSweep(ctx context.Context) ([]PresenceChange, error) {
	return WithTxV(ctx, s, func(tx *Tx) ([]PresenceChange, error) {
		if _, err := tx.exec(ctx, `SET LOCAL synchronous_commit TO off`); err != nil {
			return nil, err
		}
		rows, err := tx.query(ctx, `
			WITH dead AS (
				SELECT id FROM presence_replicas WHERE expires_at < now() FOR UPDATE SKIP LOCKED),
			gone AS (
				DELETE FROM presence_sockets s USING dead WHERE s.replica_id = dead.id
				RETURNING s.workspace_id, s.user_id),
			counted AS (
				SELECT workspace_id, user_id, count(*) AS n FROM gone GROUP BY 1, 2),
			updated AS (
				UPDATE presence_users p SET replicas = p.replicas - counted.n, version = nextval('presence_version')
				FROM counted WHERE p.workspace_id = counted.workspace_id AND p.user_id = counted.user_id
				RETURNING p.workspace_id, p.user_id, p.replicas, p.version),
			expired AS (
				DELETE FROM presence_replicas r USING dead WHERE r.id = dead.id)
			SELECT workspace_id, user_id, replicas, version FROM updated`)
		if err != nil {
			return nil, err
		}
		changes, err := scanPresence(rows, nil, func(n int) bool { return n <= 0 })
		if err != nil {
			return nil, err
		}
		return changes, tx.presenceDropOffline(ctx, changes)
	})
}

// PresenceOnline lists who is online in workspaceID, for a member of it. A replica that died
// still counts until it is swept (at most its registration's time to live and a sweep
// interval). Codes: not_found (workspace), forbidden.
func (tx *Reader) PresenceOnline(ctx context.Context, actor Actor, workspaceID string) ([]OnlineMember, error) {
	if _, err := tx.requireMemberToRead(ctx, workspaceID, actor); err != nil {
		return nil, err
	}
	rows, err := tx.query(ctx, `SELECT user_id, version FROM presence_users
		WHERE workspace_id = $1 AND replicas > 0 ORDER BY user_id`, workspaceID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []OnlineMember{}
	for rows.Next() {
		m := OnlineMember{Online: true}
		if err := rows.Scan(&m.UserID, &m.Version); err != nil {
			return nil, err
		}
		out = append(out, m)
	}
	return out, rows.Err()
}

// presenceDropOffline deletes the counts that reached zero among changes (offline ones), unless
// another replica counted the person again meanwhile; the sequence keeps versions rising.
func (tx *Tx) presenceDropOffline(ctx context.Context, changes []PresenceChange) error {
	var gone []PresenceKey
	for _, c := range changes {
		if !c.Online {
			gone = append(gone, c.PresenceKey)
		}
	}
	if len(gone) == 0 {
		return nil
	}
	ws, users := presenceColumns(gone)
	_, err := tx.exec(ctx, `DELETE FROM presence_users p USING unnest($1::text[], $2::text[]) AS t(w, u)
		WHERE p.workspace_id = t.w AND p.user_id = t.u AND p.replicas <= 0`, ws, users)
	return err
}

// presenceColumns sorts keys and splits them into the two arrays the statements take.
func presenceColumns(keys []PresenceKey) (ws, users []string) {
	keys = slices.Clone(keys)
	slices.SortFunc(keys, func(a, b PresenceKey) int {
		return cmp.Or(cmp.Compare(a.WorkspaceID, b.WorkspaceID), cmp.Compare(a.UserID, b.UserID))
	})
	ws, users = make([]string, len(keys)), make([]string, len(keys))
	for i, k := range keys {
		ws[i], users[i] = k.WorkspaceID, k.UserID
	}
	return ws, users
}

// scanPresence appends to changes the rows whose count is a transition (at reports it).
func scanPresence(rows pgx.Rows, changes []PresenceChange, at func(replicas int) bool) ([]PresenceChange, error) {
	defer rows.Close()
	for rows.Next() {
		var c PresenceChange
		var n int
		if err := rows.Scan(&c.WorkspaceID, &c.UserID, &n, &c.Version); err != nil {
			return nil, err
		}
		if at(n) {
			c.Online = n > 0
			changes = append(changes, c)
		}
	}
	return changes, rows.Err()
}
