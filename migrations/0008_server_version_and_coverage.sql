-- What each live run talked to, and from where the database holds every
-- revision, so each run can check itself against etcd's own counters.

-- The etcd server version reported by the Maintenance Status call (live
-- runs only).
ALTER TABLE runs ADD COLUMN etcd_version TEXT;
-- Every revision (in the run's scope) from this one up to the run's head is
-- stored, across this run and the earlier runs it continued from.
ALTER TABLE runs ADD COLUMN covered_from INTEGER;
