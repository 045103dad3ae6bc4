-- What a run found of a restore (or rewind) of etcd, as JSON: the earlier
-- complete run it would have continued, its head and compaction revisions
-- and this run's, and the first key whose newest write differs at a
-- revision both hold. A run that found one failed and stored nothing more.
-- NULL for every other run.
ALTER TABLE runs ADD COLUMN restored TEXT;
