-- Facts about each revision's object that the duplicate-create detectors
-- read without decoding again.

-- The controller owner (ownerReference with controller: true).
ALTER TABLE revisions ADD COLUMN owner_kind TEXT;
ALTER TABLE revisions ADD COLUMN owner_name TEXT;
ALTER TABLE revisions ADD COLUMN owner_uid TEXT;
ALTER TABLE revisions ADD COLUMN generate_name TEXT;
-- First 16 bytes of the SHA-256 of the canonical `spec`.
ALTER TABLE revisions ADD COLUMN spec_hash BLOB;
ALTER TABLE revisions ADD COLUMN creation_timestamp TEXT;
ALTER TABLE revisions ADD COLUMN deletion_timestamp TEXT;
-- status.phase (Pods: Pending, Running, Succeeded, Failed).
ALTER TABLE revisions ADD COLUMN phase TEXT;
-- The node a Pod runs on or is pinned to.
ALTER TABLE revisions ADD COLUMN node TEXT;
-- What an owner asks for: spec.replicas (ReplicaSet, ReplicationController,
-- StatefulSet) or spec.parallelism (Job).
ALTER TABLE revisions ADD COLUMN desired INTEGER;
-- Field managers in metadata.managedFields, comma-separated.
ALTER TABLE revisions ADD COLUMN managers TEXT;

CREATE INDEX revisions_by_owner ON revisions (owner_uid) WHERE owner_uid IS NOT NULL;
-- Repeated entries within this revision's lists (ownerReferences,
-- finalizers, RBAC subjects, pod-spec lists keyed by name), as a JSON array
-- of {path, entry, count}; NULL when there are none.
ALTER TABLE revisions ADD COLUMN duplicates TEXT;
