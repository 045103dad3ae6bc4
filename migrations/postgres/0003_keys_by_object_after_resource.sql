-- keys_by_object led with cluster_id, as the unique (cluster_id, key) does.
-- For a cluster whose keys the statistics do not know yet (its first run,
-- before an analyze), the planner priced both as one row and took the
-- smaller, keys_by_object, for a lookup by key: every key of the cluster
-- read for each key asked (the history check of a cluster's first run into
-- a database of twelve: 156 s for a page of 1,000 keys). Led by the
-- resource, it serves what it is for (objects by resource, namespace and
-- name, with or without their cluster) and never a lookup by key.
DROP INDEX keys_by_object;
CREATE INDEX keys_by_object ON keys (resource, cluster_id, namespace, name);
