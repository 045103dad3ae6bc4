-- Many clusters in one database: the name `--cluster` gives a cluster
-- (`prod-eu-1`), shown instead of etcd's cluster id; one name per cluster
-- and one cluster per name (NULLs, unnamed clusters, do not collide).
ALTER TABLE clusters ADD COLUMN name TEXT;
CREATE UNIQUE INDEX clusters_by_name ON clusters (name);

-- A fleet report reads each cluster's findings most severe first.
CREATE INDEX findings_by_cluster_severity ON findings (cluster_id, severity, id);
