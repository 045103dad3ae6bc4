-- Findings are read most severe first, a page at a time, and replaced per
-- cluster by a streaming writer that looks each one up by its identity.
CREATE INDEX findings_by_severity ON findings (severity, id);
CREATE INDEX findings_by_cluster ON findings (cluster_id, detector);
