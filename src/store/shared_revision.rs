//! Revisions that more than one stored key holds. etcd gives every write
//! its own revision; one txn that writes several keys gives them all the
//! same one. kube-apiserver writes one key a txn, so under its prefix a
//! revision shared by keys is either keys deleted together when the lease
//! they share expired (tombstones only) or a txn no apiserver sent.

use super::reader::SharedRevisionReads;
use super::sql::{one_row, Cursor, Sql};
use super::tables::Cell;
use super::StoreError;
use crate::source::Revision;
use crate::store::ClusterId;

/// One stored key's row at a shared revision.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SharedRow {
    pub key: String,
    pub create_revision: Revision,
    pub version: i64,
    pub deleted: bool,
}

/// A revision at which at least two keys and one write that is not a
/// delete are stored, with the rows (in key order) that hold it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SharedRevision {
    pub revision: Revision,
    pub rows: Vec<SharedRow>,
}

/// The shared revisions of a cluster a detector reads: the oldest ones, up
/// to a limit, and how many there are in all.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SharedRevisions {
    pub listed: Vec<SharedRevision>,
    pub total: u64,
}

/// Groups rows read in revision order into [`SharedRevision`]s.
fn group(rows: impl IntoIterator<Item = (Revision, SharedRow)>) -> Vec<SharedRevision> {
    let mut out: Vec<SharedRevision> = Vec::new();
    for (revision, row) in rows {
        match out.last_mut() {
            Some(last) if last.revision == revision => last.rows.push(row),
            _ => out.push(SharedRevision {
                revision,
                rows: vec![row],
            }),
        }
    }
    out
}

/// The revisions of a cluster two or more keys hold, one of them not as a
/// tombstone, read in revision order through `revisions_by_cluster`.
/// Tombstones a run inferred (`deleted_after`) are not etcd's: no revision
/// of etcd's wrote them, so they share it with whatever etcd wrote there.
const SHARED: &str = "SELECT r.mod_revision FROM revisions r \
     WHERE r.cluster_id = $1 AND r.deleted_after IS NULL GROUP BY r.mod_revision \
     HAVING count(*) > 1 AND min(CASE WHEN r.deleted THEN 1 ELSE 0 END) = 0";

impl<T: Sql + ?Sized> SharedRevisionReads for T {
    fn shared_revisions(&self, cluster: ClusterId, limit: usize) -> Result<SharedRevisions, StoreError> {
        let cluster = Cell::from(cluster);
        let total = one_row(
            self,
            "revisions",
            &format!("SELECT count(*) FROM ({SHARED}) s"),
            std::slice::from_ref(&cluster),
            |c| c.int("count"),
        )?;
        if total == 0 {
            return Ok(SharedRevisions::default());
        }
        let mut rows = Vec::new();
        self.each(
            "revisions",
            &format!(
                "WITH shared AS ({SHARED} ORDER BY r.mod_revision LIMIT $2) \
                 SELECT r.mod_revision, k.key, r.create_revision, r.version, r.deleted \
                 FROM shared s JOIN revisions r ON r.cluster_id = $1 AND r.mod_revision = s.mod_revision \
                 AND r.deleted_after IS NULL \
                 JOIN keys k ON k.id = r.key_id ORDER BY r.mod_revision, k.key"
            ),
            &[cluster, Cell::Int(i64::try_from(limit).unwrap_or(i64::MAX))],
            &mut |row| {
                let mut c = Cursor::new(self, "revisions", row);
                rows.push((
                    c.revision("mod_revision")?,
                    SharedRow {
                        key: c.lossy("key")?,
                        create_revision: c.revision("create_revision")?,
                        version: c.int("version")?,
                        deleted: c.flag("deleted")?,
                    },
                ));
                Ok(())
            },
        )?;
        Ok(SharedRevisions {
            listed: group(rows),
            total: total as u64,
        })
    }
}
