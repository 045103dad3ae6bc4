-- The cluster's clock, since etcd keeps none. A mark is a time the
-- cluster wrote at a revision and that says when it was written: a
-- Lease's spec.renewTime, kept even when Leases are not stored.
CREATE TABLE clock_marks (
    cluster_id INTEGER NOT NULL REFERENCES clusters(id),
    revision INTEGER NOT NULL,
    -- RFC 3339, as the object wrote it.
    at TEXT NOT NULL,
    PRIMARY KEY (cluster_id, revision)
) WITHOUT ROWID;

-- What every anchor (marks, creation, managedFields and deletion
-- timestamps, runs, attributed audit requests) says, folded so that one
-- lookup each way bounds any revision: `earliest` is the latest time any
-- revision at or before this one is known to have been written no
-- earlier than; `latest` the earliest time any revision at or after it was
-- written no later than. Microseconds since the Unix epoch; rebuilt by
-- every `analyze`.
CREATE TABLE clock_envelope (
    cluster_id INTEGER NOT NULL REFERENCES clusters(id),
    revision INTEGER NOT NULL,
    earliest INTEGER,
    latest INTEGER,
    PRIMARY KEY (cluster_id, revision)
) WITHOUT ROWID;

-- An Event's newest occurrence: the write of that revision was no earlier.
ALTER TABLE revisions ADD COLUMN event_time TEXT;
