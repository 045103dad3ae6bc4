//! Retention: removing old runs and the revisions only they needed.

use super::Store;
use crate::store::Pruned;
use crate::store::StoreError;

impl crate::store::recorder::PruneWrites for Store {
    fn prune(&self, before: Option<&str>, keep: Option<u32>) -> Result<Pruned, StoreError> {
        let keep = keep.map(i64::from);
        self.in_transaction(|| {
            let mut pruned = Pruned::default();
            self.execute(
                "CREATE TEMP TABLE doomed (id bigint PRIMARY KEY, cluster_id bigint) ON COMMIT DROP",
                &[],
            )?;
            pruned.runs = self.execute(
                r#"INSERT INTO doomed SELECT id, cluster_id FROM runs r WHERE status != 'running'
                   AND ($1::text IS NULL OR started_at COLLATE "C" < $1::text)
                   AND ($2::bigint IS NULL OR (SELECT count(*) FROM runs n
                     WHERE n.cluster_id IS NOT DISTINCT FROM r.cluster_id AND n.id > r.id) >= $2::bigint)
                   AND id NOT IN (SELECT max(id) FROM runs WHERE status = 'complete' GROUP BY cluster_id)"#,
                &[&before, &keep],
            )? as i64;
            let clusters = self.query(
                "SELECT cluster_id FROM doomed WHERE cluster_id IS NOT NULL GROUP BY cluster_id ORDER BY min(id)",
                &[],
            )?;
            for cluster in clusters.iter().map(|r| r.get::<_, i64>(0)) {
                // The oldest remaining run, and where its view starts.
                let kept = self.query_opt(
                    "SELECT id, coalesce(history_from - 1, head_revision) FROM runs \
                     WHERE cluster_id = $1 AND id NOT IN (SELECT id FROM doomed) AND head_revision IS NOT NULL \
                     ORDER BY coalesce(history_from - 1, head_revision), id LIMIT 1",
                    &[&cluster],
                )?;
                pruned.revisions += match kept.map(|r| (r.get::<_, i64>(0), r.get::<_, i64>(1))) {
                    Some((oldest, start)) => {
                        let removed = self.execute(
                            "DELETE FROM revisions WHERE cluster_id = $1 AND mod_revision <= $2 AND NOT (NOT deleted AND mod_revision = \
                               (SELECT max(mod_revision) FROM revisions p \
                                WHERE p.key_id = revisions.key_id AND p.mod_revision <= $2))",
                            &[&cluster, &start],
                        )?;
                        self.execute(
                            "UPDATE revisions SET run_id = $1 \
                             WHERE run_id IN (SELECT id FROM doomed WHERE cluster_id = $2)",
                            &[&oldest, &cluster],
                        )?;
                        // Generations begun before the cut lost revisions:
                        // the unbroken history now starts after it.
                        self.execute(
                            "UPDATE runs SET covered_from = greatest(coalesce(covered_from, history_from, 1), $2::bigint + 1) \
                             WHERE cluster_id = $1 AND id NOT IN (SELECT id FROM doomed)",
                            &[&cluster, &start],
                        )?;
                        removed
                    }
                    None => self.execute(
                        "DELETE FROM revisions WHERE cluster_id = $1",
                        &[&cluster],
                    )?,
                } as i64;
            }
            for table in ["history_gaps", "run_members"] {
                self.execute(
                    &format!("DELETE FROM {table} WHERE run_id IN (SELECT id FROM doomed)"),
                    &[],
                )?;
            }
            self.execute("DELETE FROM runs WHERE id IN (SELECT id FROM doomed)", &[])?;
            // Who wrote a revision goes with it; a request keeps its row
            // (the audit log said it) but no longer names a removed key.
            self.execute(
                "DELETE FROM revision_writers WHERE NOT EXISTS (SELECT 1 FROM revisions r \
                   WHERE r.key_id = revision_writers.key_id AND r.mod_revision = revision_writers.mod_revision)",
                &[],
            )?;
            self.execute(
                "UPDATE audit_requests SET key_id = NULL WHERE key_id IS NOT NULL \
                   AND NOT EXISTS (SELECT 1 FROM revisions WHERE key_id = audit_requests.key_id)",
                &[],
            )?;
            pruned.keys = self.execute(
                "DELETE FROM keys WHERE NOT EXISTS (SELECT 1 FROM revisions WHERE key_id = keys.id)",
                &[],
            )? as i64;
            // Stored contents no revision uses, deltas before their bases
            // (NOT EXISTS: PostgreSQL plans NOT IN over a subquery poorly).
            self.execute(
                "CREATE TEMP TABLE used (hash bytea PRIMARY KEY) ON COMMIT DROP",
                &[],
            )?;
            self.execute(
                "INSERT INTO used SELECT semantic_sha256 FROM revisions WHERE semantic_sha256 IS NOT NULL \
                 ON CONFLICT DO NOTHING",
                &[],
            )?;
            loop {
                let removed = self.execute(
                    "DELETE FROM semantic_values v WHERE NOT EXISTS (SELECT 1 FROM used u WHERE u.hash = v.hash) \
                     AND NOT EXISTS (SELECT 1 FROM semantic_values d WHERE d.base = v.id)",
                    &[],
                )?;
                pruned.values += removed as i64;
                if removed == 0 {
                    break;
                }
            }
            Ok(pruned)
        })
    }

    fn vacuum(&self) -> Result<(), StoreError> {
        let tables = self.query(
            "SELECT quote_ident(tablename) FROM pg_tables WHERE schemaname = $1 ORDER BY tablename",
            &[&super::SCHEMA],
        )?;
        for table in tables.iter().map(|r| r.get::<_, String>(0)) {
            self.with_client(|c| c.batch_execute(&format!("VACUUM (ANALYZE) {table}")))?;
        }
        Ok(())
    }
}
