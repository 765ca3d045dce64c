// Package persist is Natter's Postgres layer (pgx/v5): the pool, the one transaction helper, one
// file per resource, and the event writer. It is the final guard for membership, role and guest
// rules: every check runs inside the transaction of the write it guards, and every statement on
// workspace data filters by workspace_id. It imports only migrations.
package persist
