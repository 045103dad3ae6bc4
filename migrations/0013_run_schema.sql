-- Which Kubernetes schema named the fields of a run's objects: the
-- built-in one, or the files given with --proto-path / --descriptor-set and
-- a hash of what they compiled to.
ALTER TABLE runs ADD COLUMN schema TEXT;
