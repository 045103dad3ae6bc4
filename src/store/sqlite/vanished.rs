//! Deletes compaction hid (see [`crate::store::vanished`]): the stored keys
//! a run compares with what its source holds, and the tombstones it infers.

use super::Store;
use crate::store::vanished::{InferredDelete, RunHead, StoredKey, StoredRevision};
use crate::store::{RunId, StoreError};
use rusqlite::params;

impl crate::store::recorder::VanishedWrites for Store {
    fn stored_keys(
        &self,
        cluster: i64,
        prefix: &[u8],
        head: i64,
        after: Option<&[u8]>,
        limit: usize,
    ) -> Result<Vec<StoredKey>, StoreError> {
        let mut end = prefix.to_vec();
        end.push(0xff);
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT k.id, k.key, r.mod_revision, r.create_revision, r.deleted, \
                 p.mod_revision, p.create_revision, p.deleted FROM keys k \
                 JOIN revisions r ON r.key_id = k.id AND r.mod_revision = \
                   (SELECT max(x.mod_revision) FROM revisions x WHERE x.key_id = k.id AND x.mod_revision <= ?4) \
                 LEFT JOIN revisions p ON p.key_id = k.id AND p.mod_revision = \
                   (SELECT max(y.mod_revision) FROM revisions y WHERE y.key_id = k.id AND y.mod_revision < r.create_revision) \
                 WHERE k.cluster_id = ?1 AND k.key >= ?2 AND k.key < ?3 AND (?5 IS NULL OR k.key > ?5) \
                 ORDER BY k.key LIMIT ?6",
            )
            .map_err(|e| self.err(e))?;
        let rows = stmt
            .query_map(params![cluster, prefix, end, head, after, limit as i64], |r| {
                let before = match r.get::<_, Option<i64>>(5)? {
                    Some(mod_revision) => Some(StoredRevision {
                        mod_revision,
                        create_revision: r.get(6)?,
                        deleted: r.get(7)?,
                    }),
                    None => None,
                };
                Ok(StoredKey {
                    key_id: r.get(0)?,
                    key: r.get(1)?,
                    newest: StoredRevision {
                        mod_revision: r.get(2)?,
                        create_revision: r.get(3)?,
                        deleted: r.get(4)?,
                    },
                    before,
                })
            })
            .map_err(|e| self.err(e))?;
        rows.collect::<Result<_, _>>().map_err(|e| self.err(e))
    }

    fn run_heads(&self, cluster: i64, run: RunId) -> Result<Vec<RunHead>, StoreError> {
        let mut stmt = self
            .conn
            .prepare(
                "SELECT head_revision, prefix FROM runs WHERE cluster_id = ?1 AND id != ?2 \
                 AND status = 'complete' AND head_revision IS NOT NULL ORDER BY head_revision",
            )
            .map_err(|e| self.err(e))?;
        let rows = stmt
            .query_map(params![cluster, run.0], |r| {
                Ok(RunHead {
                    head: r.get(0)?,
                    prefix: r.get::<_, String>(1)?.into_bytes(),
                })
            })
            .map_err(|e| self.err(e))?;
        rows.collect::<Result<_, _>>().map_err(|e| self.err(e))
    }

    fn store_inferred_deletes(
        &self,
        cluster: i64,
        run: RunId,
        deletes: &[InferredDelete],
    ) -> Result<(), StoreError> {
        self.in_transaction(|| {
            let mut stmt = self
                .conn
                .prepare_cached(
                    "INSERT INTO revisions (key_id, mod_revision, create_revision, version, lease, deleted, value_size, \
                     run_id, cluster_id, deleted_after) VALUES (?1, ?2, ?3, 0, 0, 1, 0, ?4, ?5, ?6)",
                )
                .map_err(|e| self.err(e))?;
            for d in deletes {
                stmt.execute(params![d.key_id, d.mod_revision, d.create_revision, run.0, cluster, d.after])
                    .map_err(|e| self.err(e))?;
            }
            Ok(())
        })
    }
}
