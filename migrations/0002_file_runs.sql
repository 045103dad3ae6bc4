-- Runs that read an etcd data file (--file or --fetch-snapshot) record the
-- file they read.

ALTER TABLE runs ADD COLUMN file_size INTEGER;
ALTER TABLE runs ADD COLUMN file_sha256 TEXT;
-- Lowest and highest main revision found in the file's key bucket.
ALTER TABLE runs ADD COLUMN file_first_revision INTEGER;
ALTER TABLE runs ADD COLUMN file_last_revision INTEGER;
