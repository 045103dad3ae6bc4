-- Evidence in a stored value that kube-apiserver did not write it (a
-- resourceVersion kept, a kind or name that is not the key's, a create
-- without uid or creationTimestamp, JSON not as its encoder writes it), as
-- a JSON array of {signal, detail}; read by the foreign-writes detector.
-- NULL when there is none, and for revisions stored before this migration.
ALTER TABLE revisions ADD COLUMN foreign_evidence TEXT;
