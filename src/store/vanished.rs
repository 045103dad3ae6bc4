//! Deletes compaction hid: a key an earlier run stored live that a later
//! run no longer finds (or finds in a newer generation), whose tombstone
//! fell in revisions compaction removed before the later run could read
//! them. The later run stores a tombstone at the latest revision the
//! delete can have had, marked with the revision it came after.

use super::recorder::VanishedWrites;
use super::sql::{Cursor, Sql};
use super::tables::Cell;
use super::{KeyId, RunId, StoreError};
use crate::source::Revision;
use crate::store::ClusterId;

/// One stored revision's generation facts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StoredRevision {
    pub mod_revision: Revision,
    /// For a tombstone, the generation it ended.
    pub create_revision: Revision,
    pub deleted: bool,
}

/// A stored key as a run's head sees it: its newest stored revision at or
/// before the head, and the newest before that revision's generation began
/// (what the generation followed).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StoredKey {
    pub key_id: KeyId,
    pub key: Vec<u8>,
    pub newest: StoredRevision,
    pub before: Option<StoredRevision>,
}

/// A delete a run inferred: the tombstone it stores for the generation
/// `create_revision` of `key_id`, at `mod_revision`, the latest revision the
/// delete can have had; it came after revision `after` (the head of the last
/// run that saw the object, or its last stored revision).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct InferredDelete {
    pub key_id: KeyId,
    pub create_revision: Revision,
    pub mod_revision: Revision,
    pub after: Revision,
}

/// The head of an earlier run and the prefix it read under: the run saw
/// every key under the prefix as stored at its head.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RunHead {
    pub head: Revision,
    pub prefix: Vec<u8>,
}

impl<T: Sql + ?Sized> VanishedWrites for T {
    fn stored_keys(
        &self,
        cluster: ClusterId,
        prefix: &[u8],
        head: Revision,
        after: Option<&[u8]>,
        limit: usize,
    ) -> Result<Vec<StoredKey>, StoreError> {
        let mut end = prefix.to_vec();
        end.push(0xff);
        let params = [
            Cell::from(cluster),
            Cell::Bytes(prefix.to_vec()),
            Cell::Bytes(end),
            head.into(),
            Cell::Bytes(after.unwrap_or_default().to_vec()),
            Cell::Int(i64::try_from(limit).unwrap_or(i64::MAX)),
        ];
        let mut out = Vec::new();
        // Each key's newest revision at or before the head (keys with none
        // left out before the limit counts), then the newest before that
        // revision's generation began.
        self.each(
            "revisions",
            "SELECT q.id, q.key, q.mod_revision, q.create_revision, q.deleted, \
             p.mod_revision, p.create_revision, p.deleted \
             FROM (SELECT k.id, k.key, r.mod_revision, r.create_revision, r.deleted, \
                     (SELECT max(y.mod_revision) FROM revisions y \
                      WHERE y.key_id = k.id AND y.mod_revision < r.create_revision) AS before \
                   FROM (SELECT n.id, n.key, n.newest FROM \
                           (SELECT id, key, (SELECT max(x.mod_revision) FROM revisions x \
                                             WHERE x.key_id = keys.id AND x.mod_revision <= $4) AS newest \
                            FROM keys WHERE cluster_id = $1 AND key >= $2 AND key < $3 AND key > $5) n \
                         WHERE n.newest IS NOT NULL ORDER BY n.key LIMIT $6) k \
                   JOIN revisions r ON r.key_id = k.id AND r.mod_revision = k.newest) q \
             LEFT JOIN revisions p ON p.key_id = q.id AND p.mod_revision = q.before \
             ORDER BY q.key",
            &params,
            &mut |row| {
                let mut c = Cursor::new(self, "revisions", row);
                let (key_id, key) = (KeyId(c.int("keys.id")?), c.bytes("keys.key")?);
                let newest = StoredRevision {
                    mod_revision: c.revision("mod_revision")?,
                    create_revision: c.revision("create_revision")?,
                    deleted: c.flag("deleted")?,
                };
                let before = match c.opt_revision("mod_revision")? {
                    Some(mod_revision) => Some(StoredRevision {
                        mod_revision,
                        create_revision: c.revision("create_revision")?,
                        deleted: c.flag("deleted")?,
                    }),
                    None => None,
                };
                out.push(StoredKey {
                    key_id,
                    key,
                    newest,
                    before,
                });
                Ok(())
            },
        )?;
        Ok(out)
    }

    fn run_heads(&self, cluster: ClusterId, run: RunId) -> Result<Vec<RunHead>, StoreError> {
        let mut out = Vec::new();
        self.each(
            "runs",
            "SELECT head_revision, prefix FROM runs WHERE cluster_id = $1 AND id != $2 \
             AND status = 'complete' AND head_revision IS NOT NULL ORDER BY head_revision",
            &[Cell::from(cluster), Cell::Int(run.0)],
            &mut |row| {
                let mut c = Cursor::new(self, "runs", row);
                out.push(RunHead {
                    head: c.revision("head_revision")?,
                    prefix: c.text("prefix")?.into_bytes(),
                });
                Ok(())
            },
        )?;
        Ok(out)
    }

    fn store_inferred_deletes(
        &self,
        cluster: ClusterId,
        run: RunId,
        deletes: &[InferredDelete],
    ) -> Result<(), StoreError> {
        let cells: Vec<Cell> = deletes
            .iter()
            .flat_map(|d| {
                [
                    d.key_id.into(),
                    d.mod_revision.into(),
                    d.create_revision.into(),
                    Cell::Int(0),
                    Cell::Int(0),
                    Cell::Int(1),
                    Cell::Int(0),
                    Cell::Int(run.0),
                    cluster.into(),
                    d.after.into(),
                ]
            })
            .collect();
        self.atomically(&mut || {
            self.insert_rows(
                "revisions",
                &[
                    "key_id",
                    "mod_revision",
                    "create_revision",
                    "version",
                    "lease",
                    "deleted",
                    "value_size",
                    "run_id",
                    "cluster_id",
                    "deleted_after",
                ],
                &cells,
            )
        })
    }
}
