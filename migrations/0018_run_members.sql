-- Which etcd member served a live run, and each move to another when the
-- serving one failed: one row per member that served, in order.
CREATE TABLE run_members (
    id INTEGER PRIMARY KEY,
    run_id INTEGER NOT NULL REFERENCES runs(id),
    -- When it started serving (RFC 3339).
    at TEXT NOT NULL,
    -- The client URL the run reached it at.
    endpoint TEXT NOT NULL,
    -- etcd's member id, hex as `etcdctl member list` shows it.
    member_id TEXT NOT NULL,
    -- Why the member before it stopped serving; NULL for the first.
    moved_because TEXT
);
CREATE INDEX run_members_by_run ON run_members (run_id, id);
