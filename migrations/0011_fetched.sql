-- How a live run fetched history: 'watch' (replayed through the Watch API)
-- or 'snapshot' (the Maintenance snapshot, downloaded and read as a file).
-- NULL for runs of a data file and for runs before this migration.
ALTER TABLE runs ADD COLUMN fetched TEXT;
