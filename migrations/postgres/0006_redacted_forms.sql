-- The redacted form of a content that holds sensitive values (keyed): its
-- semantic form with each sensitive value, and each annotation copying one,
-- replaced by a placeholder naming the value's keyed hash, as zstd compressed
-- alone (never against `base`). NULL for every other content, for a resource
-- encrypted at rest (every value sensitive) and for keyed contents stored
-- before this column.
ALTER TABLE semantic_values ADD COLUMN redacted BYTEA;
