-- Semantic values move to a rowid table: as a WITHOUT ROWID table every
-- value over about 1 KB spilled into its own overflow pages, which made the
-- table 2.5 times the size of its blobs. Blobs are now zstd-compressed, and a
-- value may be compressed against the same key's earlier content (its
-- `base`), so a revision that changed a few fields costs a few bytes.

CREATE TABLE semantic_values_v6 (
    id INTEGER PRIMARY KEY,
    -- SHA-256 of the canonical JSON; HMAC-SHA-256 under the database key
    -- for objects holding sensitive values.
    hash BLOB NOT NULL UNIQUE,
    keyed INTEGER NOT NULL,
    -- How `canonical` and `managed` are compressed: 'deflate' (rows written
    -- before this migration) or 'zstd'.
    codec TEXT NOT NULL CHECK (codec IN ('deflate', 'zstd')),
    -- A full ('zstd', no base) row whose decompressed blobs are the zstd
    -- dictionary of this row's blobs; NULL when compressed alone.
    base INTEGER REFERENCES semantic_values_v6(id),
    -- Compressed canonical JSON; NULL for objects holding sensitive values,
    -- which are never stored.
    canonical BLOB,
    -- Field hashes: (varint field_paths.id, 16-byte hash) repeated; raw in
    -- 'deflate' rows, compressed like the other blobs in 'zstd' rows.
    fields BLOB NOT NULL,
    -- Compressed managedFields JSON.
    managed BLOB
);

INSERT INTO semantic_values_v6 (hash, keyed, codec, canonical, fields, managed)
    SELECT hash, keyed, 'deflate', canonical, fields, managed FROM semantic_values;
DROP TABLE semantic_values;
ALTER TABLE semantic_values_v6 RENAME TO semantic_values;
