-- Each revision names its cluster, as its key does (the writer sets it;
-- stored revisions learn it from their key). A database of many clusters
-- then reads one cluster's revisions without joining every cluster's to
-- their keys first: PostgreSQL indexes it (its migration 0002). It is the
-- key's cluster always, so it has no foreign key of its own.
ALTER TABLE revisions ADD COLUMN cluster_id INTEGER;
UPDATE revisions SET cluster_id = (SELECT cluster_id FROM keys WHERE keys.id = revisions.key_id);
