-- Runs, keys and every revision seen, written once however many runs see it.

-- Per-database settings, e.g. the random key for hashing sensitive values.
CREATE TABLE settings (
    name TEXT PRIMARY KEY,
    value BLOB NOT NULL
);

CREATE TABLE clusters (
    id INTEGER PRIMARY KEY,
    -- etcd's cluster id (hex) from response headers.
    etcd_cluster_id TEXT NOT NULL UNIQUE,
    first_seen TEXT NOT NULL
);

CREATE TABLE runs (
    id INTEGER PRIMARY KEY,
    cluster_id INTEGER REFERENCES clusters(id),
    -- The endpoints (or file) read.
    source TEXT NOT NULL,
    prefix TEXT NOT NULL,
    started_at TEXT NOT NULL,
    finished_at TEXT,
    status TEXT NOT NULL CHECK (status IN ('running', 'complete', 'failed', 'interrupted')),
    -- The revision the run pinned and read the state at.
    head_revision INTEGER,
    -- The server's compaction revision when the run started.
    compact_revision INTEGER,
    -- First revision this run replayed history from.
    history_from INTEGER,
    keys_seen INTEGER NOT NULL DEFAULT 0,
    revisions_added INTEGER NOT NULL DEFAULT 0,
    error TEXT,
    tool_version TEXT NOT NULL,
    pid INTEGER NOT NULL
);

CREATE TABLE keys (
    id INTEGER PRIMARY KEY,
    cluster_id INTEGER NOT NULL REFERENCES clusters(id),
    key BLOB NOT NULL,
    api_group TEXT,
    resource TEXT,
    namespace TEXT,
    name TEXT,
    UNIQUE (cluster_id, key)
);

CREATE TABLE revisions (
    key_id INTEGER NOT NULL REFERENCES keys(id),
    mod_revision INTEGER NOT NULL,
    -- For a tombstone: the create_revision of the generation it ended.
    create_revision INTEGER NOT NULL,
    version INTEGER NOT NULL,
    lease INTEGER NOT NULL,
    deleted INTEGER NOT NULL,
    value_size INTEGER NOT NULL,
    -- SHA-256 of the raw value; for sensitive resources (Secrets) an
    -- HMAC-SHA-256 under this database's random key, so a leaked database is
    -- no oracle for guessing short secrets.
    value_sha256 BLOB,
    value_hash TEXT CHECK (value_hash IN ('sha256', 'hmac-sha256')),
    encoding TEXT,
    -- provider:version:key for values encrypted at rest.
    encryption TEXT,
    api_version TEXT,
    kind TEXT,
    namespace TEXT,
    name TEXT,
    uid TEXT,
    generation INTEGER,
    decode_error TEXT,
    -- The run that first stored this revision.
    run_id INTEGER NOT NULL REFERENCES runs(id),
    PRIMARY KEY (key_id, mod_revision)
) WITHOUT ROWID;

CREATE INDEX revisions_by_revision ON revisions (mod_revision);

-- Revisions lost to compaction between two runs of one cluster.
CREATE TABLE history_gaps (
    id INTEGER PRIMARY KEY,
    run_id INTEGER NOT NULL REFERENCES runs(id),
    cluster_id INTEGER NOT NULL REFERENCES clusters(id),
    from_revision INTEGER NOT NULL,
    to_revision INTEGER NOT NULL
);
