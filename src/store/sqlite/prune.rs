//! Retention: removing old runs and the revisions only they needed.

use super::Store;
use crate::store::Pruned;
use crate::store::StoreError;
use rusqlite::{params, OptionalExtension};

impl crate::store::recorder::PruneWrites for Store {
    fn prune(&self, before: Option<&str>, keep: Option<u32>) -> Result<Pruned, StoreError> {
        let err = |e| self.err(e);
        let conn = &self.conn;
        let prune = || -> rusqlite::Result<Pruned> {
            let mut pruned = Pruned::default();
            conn.execute_batch(
                "DROP TABLE IF EXISTS temp.doomed; CREATE TEMP TABLE doomed (id INTEGER PRIMARY KEY, cluster_id INTEGER)",
            )?;
            pruned.runs = conn.execute(
                "INSERT INTO doomed SELECT id, cluster_id FROM runs r WHERE status != 'running' \
                 AND (?1 IS NULL OR started_at < ?1) \
                 AND (?2 IS NULL OR (SELECT count(*) FROM runs n WHERE n.cluster_id IS r.cluster_id AND n.id > r.id) >= ?2) \
                 AND id NOT IN (SELECT max(id) FROM runs WHERE status = 'complete' GROUP BY cluster_id)",
                params![before, keep],
            )? as i64;
            let clusters: Vec<i64> = conn
                .prepare("SELECT DISTINCT cluster_id FROM doomed WHERE cluster_id IS NOT NULL")?
                .query_map([], |r| r.get(0))?
                .collect::<Result<_, _>>()?;
            for cluster in clusters {
                // The oldest remaining run, and where its view starts.
                let kept: Option<(i64, i64)> = conn
                    .query_row(
                        "SELECT id, coalesce(history_from - 1, head_revision) FROM runs \
                         WHERE cluster_id = ?1 AND id NOT IN (SELECT id FROM doomed) AND head_revision IS NOT NULL \
                         ORDER BY coalesce(history_from - 1, head_revision), id LIMIT 1",
                        [cluster],
                        |r| Ok((r.get(0)?, r.get(1)?)),
                    )
                    .optional()?;
                pruned.revisions += match kept {
                    Some((oldest, start)) => {
                        let removed = conn.execute(
                            "DELETE FROM revisions WHERE key_id IN (SELECT id FROM keys WHERE cluster_id = ?1) \
                             AND mod_revision <= ?2 AND NOT (deleted = 0 AND mod_revision = \
                               (SELECT max(mod_revision) FROM revisions p WHERE p.key_id = revisions.key_id AND p.mod_revision <= ?2))",
                            params![cluster, start],
                        )?;
                        conn.execute(
                            "UPDATE revisions SET run_id = ?1 \
                             WHERE run_id IN (SELECT id FROM doomed WHERE cluster_id = ?2)",
                            [oldest, cluster],
                        )?;
                        // Generations begun before the cut lost revisions:
                        // the unbroken history now starts after it.
                        conn.execute(
                            "UPDATE runs SET covered_from = max(coalesce(covered_from, history_from, 1), ?2 + 1) \
                             WHERE cluster_id = ?1 AND id NOT IN (SELECT id FROM doomed)",
                            params![cluster, start],
                        )?;
                        removed
                    }
                    None => conn.execute(
                        "DELETE FROM revisions WHERE key_id IN (SELECT id FROM keys WHERE cluster_id = ?1)",
                        [cluster],
                    )?,
                } as i64;
            }
            for table in ["history_gaps", "run_members"] {
                conn.execute(
                    &format!("DELETE FROM {table} WHERE run_id IN (SELECT id FROM doomed)"),
                    [],
                )?;
            }
            conn.execute("DELETE FROM runs WHERE id IN (SELECT id FROM doomed)", [])?;
            // Who wrote a revision goes with it; a request keeps its row
            // (the audit log said it) but no longer names a removed key.
            conn.execute_batch(
                "DELETE FROM revision_writers WHERE NOT EXISTS (SELECT 1 FROM revisions r \
                   WHERE r.key_id = revision_writers.key_id AND r.mod_revision = revision_writers.mod_revision); \
                 UPDATE audit_requests SET key_id = NULL WHERE key_id IS NOT NULL \
                   AND NOT EXISTS (SELECT 1 FROM revisions WHERE key_id = audit_requests.key_id);",
            )?;
            pruned.keys = conn.execute(
                "DELETE FROM keys WHERE NOT EXISTS (SELECT 1 FROM revisions WHERE key_id = keys.id)",
                [],
            )? as i64;
            // Stored contents no revision uses, deltas before their bases.
            conn.execute_batch(
                "DROP TABLE IF EXISTS temp.used; \
                 CREATE TEMP TABLE used (hash BLOB PRIMARY KEY) WITHOUT ROWID; \
                 INSERT OR IGNORE INTO used SELECT semantic_sha256 FROM revisions WHERE semantic_sha256 IS NOT NULL",
            )?;
            loop {
                let removed = conn.execute(
                    "DELETE FROM semantic_values WHERE hash NOT IN (SELECT hash FROM used) \
                     AND id NOT IN (SELECT base FROM semantic_values WHERE base IS NOT NULL)",
                    [],
                )?;
                pruned.values += removed as i64;
                if removed == 0 {
                    break;
                }
            }
            conn.execute_batch("DROP TABLE temp.used; DROP TABLE temp.doomed")?;
            Ok(pruned)
        };
        self.in_transaction(|| prune().map_err(err))
    }

    fn vacuum(&self) -> Result<(), StoreError> {
        self.conn.execute_batch("VACUUM").map_err(|e| self.err(e))
    }
}
