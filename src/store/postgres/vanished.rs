//! Deletes compaction hid (see [`crate::store::vanished`]): the stored keys
//! a run compares with what its source holds, and the tombstones it infers.

use super::Store;
use crate::store::vanished::{InferredDelete, RunHead, StoredKey, StoredRevision};
use crate::store::{RunId, StoreError};

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
        let rows = self.query_prepared(
            "SELECT k.id, k.key, r.mod_revision, r.create_revision, r.deleted, \
             p.mod_revision, p.create_revision, p.deleted FROM keys k \
             CROSS JOIN LATERAL (SELECT mod_revision, create_revision, deleted FROM revisions \
               WHERE key_id = k.id AND mod_revision <= $4 ORDER BY mod_revision DESC LIMIT 1) r \
             LEFT JOIN LATERAL (SELECT mod_revision, create_revision, deleted FROM revisions \
               WHERE key_id = k.id AND mod_revision < r.create_revision ORDER BY mod_revision DESC LIMIT 1) p ON true \
             WHERE k.cluster_id = $1 AND k.key >= $2 AND k.key < $3 AND ($5::bytea IS NULL OR k.key > $5) \
             ORDER BY k.key LIMIT $6",
            &[&cluster, &prefix, &end, &head, &after, &(limit as i64)],
        )?;
        Ok(rows
            .iter()
            .map(|r| StoredKey {
                key_id: r.get(0),
                key: r.get(1),
                newest: StoredRevision {
                    mod_revision: r.get(2),
                    create_revision: r.get(3),
                    deleted: r.get(4),
                },
                before: r.get::<_, Option<i64>>(5).map(|mod_revision| StoredRevision {
                    mod_revision,
                    create_revision: r.get(6),
                    deleted: r.get(7),
                }),
            })
            .collect())
    }

    fn run_heads(&self, cluster: i64, run: RunId) -> Result<Vec<RunHead>, StoreError> {
        Ok(self
            .query(
                "SELECT head_revision, prefix FROM runs WHERE cluster_id = $1 AND id != $2 \
                 AND status = 'complete' AND head_revision IS NOT NULL ORDER BY head_revision",
                &[&cluster, &run.0],
            )?
            .iter()
            .map(|r| RunHead {
                head: r.get(0),
                prefix: r.get::<_, String>(1).into_bytes(),
            })
            .collect())
    }

    fn store_inferred_deletes(
        &self,
        cluster: i64,
        run: RunId,
        deletes: &[InferredDelete],
    ) -> Result<(), StoreError> {
        let keys: Vec<i64> = deletes.iter().map(|d| d.key_id).collect();
        let revisions: Vec<i64> = deletes.iter().map(|d| d.mod_revision).collect();
        let created: Vec<i64> = deletes.iter().map(|d| d.create_revision).collect();
        let after: Vec<i64> = deletes.iter().map(|d| d.after).collect();
        self.execute(
            "INSERT INTO revisions (key_id, mod_revision, create_revision, version, lease, deleted, value_size, \
             run_id, cluster_id, deleted_after) \
             SELECT d.key_id, d.mod_revision, d.created, 0, 0, true, 0, $5, $6, d.after \
             FROM unnest($1::bigint[], $2::bigint[], $3::bigint[], $4::bigint[]) AS d (key_id, mod_revision, created, after)",
            &[&keys, &revisions, &created, &after, &run.0, &cluster],
        )?;
        Ok(())
    }
}
