-- SQLite's migration 0022: each revision names its cluster, as its key
-- does (the writer sets it; stored revisions learn it from their key).
-- Per-cluster reads of a database of many clusters (stats, report) then
-- scan that cluster's revisions through `revisions_by_cluster`, instead of
-- every cluster's revisions hash-joined to the cluster's keys (1.7x slower
-- at ten clusters of a million revisions). It is the key's cluster always,
-- so it has no foreign key of its own (one check less per copied row).
ALTER TABLE revisions ADD COLUMN cluster_id BIGINT;
UPDATE revisions r SET cluster_id = k.cluster_id FROM keys k WHERE k.id = r.key_id;
ALTER TABLE revisions ALTER COLUMN cluster_id SET NOT NULL;
CREATE INDEX revisions_by_cluster ON revisions (cluster_id, mod_revision);
