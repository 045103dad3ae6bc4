-- A tombstone a run inferred: the key an earlier run stored live was gone
-- when this run read etcd (or held a newer generation), and its delete fell
-- in revisions compaction removed unread. The tombstone is stored at the
-- latest revision the delete can have had; the delete came after
-- `deleted_after` (the head of the last run that saw the object, or its last
-- stored revision). NULL for every tombstone etcd itself gave.
ALTER TABLE revisions ADD COLUMN deleted_after INTEGER;
