-- Member directory by name (persist.memberPage; docs/performance.md, "Other reads and their
-- indexes"): the first page and its total are taken from one reading of the matches, each
-- member's join order with it. The directory's index carries the user, so the workspace's
-- memberships are read from the index alone (an index-only scan, as the total's count did),
-- where without it every membership row of the database was read: a sequential scan of 60,000
-- rows for a workspace of 20,000 in the bench (14 ms at load 10, against 8 ms). The first page
-- of `grace` among 20,000 members then took 6.9 ms, against 16.0 ms for the walk and the count
-- before (the fastest of 25 runs each, same minutes, load 10).
CREATE INDEX workspace_members_directory_user_idx ON workspace_members (workspace_id, join_seq) INCLUDE (user_id);
DROP INDEX workspace_members_directory_idx;
