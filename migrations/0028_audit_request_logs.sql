-- The audit log each staged request was read from (its path, `-` for
-- standard input), so that a finding can say which log covered a write.
-- NULL for requests staged before this migration.
ALTER TABLE audit_requests ADD COLUMN log TEXT;
