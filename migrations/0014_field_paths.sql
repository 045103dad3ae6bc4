-- Field paths in the printed form of FieldPath (`data.app\.properties`),
-- not segments joined by `.`: the migration's hook (src/store/
-- legacy_paths.rs) rewrites field_paths.path, revisions.changed_paths,
-- revisions.changed_by, revisions.duplicates and the sensitive_paths
-- setting. No table changes.
SELECT 1;
