-- Field-manager attribution and observed generations.

-- Deflate-compressed JSON of the object's metadata.managedFields, kept even
-- for objects whose canonical value is not stored (it holds no values).
ALTER TABLE semantic_values ADD COLUMN managed BLOB;
-- status.observedGeneration of the revision's object.
ALTER TABLE revisions ADD COLUMN observed_generation INTEGER;
-- JSON object: changed path → field managers whose managedFields entry
-- covers it and changed in this revision.
ALTER TABLE revisions ADD COLUMN changed_by TEXT;
