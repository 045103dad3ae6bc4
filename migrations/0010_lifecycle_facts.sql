-- Facts the lifecycle detectors (stuck-deletion, dangling-owner,
-- owner-cycle) read without decoding again. NULL for revisions stored
-- before this migration, and for objects without them.

-- metadata.finalizers as a JSON array of {name, managers}: each finalizer
-- and the field managers whose managedFields entry owns it.
ALTER TABLE revisions ADD COLUMN finalizers TEXT;
-- Every metadata.ownerReferences entry, as a JSON array of
-- {apiVersion, kind, name, uid, controller?}.
ALTER TABLE revisions ADD COLUMN owner_refs TEXT;
-- The newest time the object carries (managedFields times,
-- creationTimestamp): the revision was written no earlier.
ALTER TABLE revisions ADD COLUMN written_at TEXT;
