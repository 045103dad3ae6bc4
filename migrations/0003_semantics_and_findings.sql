-- Semantic hashes, field hashes, change classes and findings.

-- Field paths (`spec.replicas`), interned.
CREATE TABLE field_paths (
    id INTEGER PRIMARY KEY,
    path TEXT NOT NULL UNIQUE
);

-- Each distinct semantic content once.
CREATE TABLE semantic_values (
    -- SHA-256 of the canonical JSON; HMAC-SHA-256 under the database key
    -- for objects holding sensitive values.
    hash BLOB PRIMARY KEY,
    keyed INTEGER NOT NULL,
    -- Deflate-compressed canonical JSON; NULL for objects holding sensitive
    -- values, which are never stored.
    canonical BLOB,
    -- Field hashes: (varint field_paths.id, 16-byte hash) repeated.
    fields BLOB NOT NULL
) WITHOUT ROWID;

ALTER TABLE revisions ADD COLUMN semantic_sha256 BLOB;
ALTER TABLE revisions ADD COLUMN change_class TEXT;
ALTER TABLE revisions ADD COLUMN change_cause TEXT;
-- JSON array of field paths.
ALTER TABLE revisions ADD COLUMN changed_paths TEXT;

CREATE INDEX revisions_unclassified ON revisions (key_id) WHERE change_class IS NULL;

CREATE TABLE findings (
    id INTEGER PRIMARY KEY,
    cluster_id INTEGER NOT NULL REFERENCES clusters(id),
    detector TEXT NOT NULL,
    severity TEXT NOT NULL CHECK (severity IN ('info', 'low', 'medium', 'high', 'critical')),
    -- JSON arrays of the etcd keys and revisions involved.
    keys TEXT NOT NULL,
    revisions TEXT NOT NULL,
    summary TEXT NOT NULL,
    -- JSON object with the evidence.
    details TEXT NOT NULL,
    analyzed_at TEXT NOT NULL
);
