//! Revisions more than one stored key holds (see
//! [`crate::store::shared_revision`]).

use super::Store;
use crate::store::shared_revision::{group, SharedRevisions, SharedRow};
use crate::store::StoreError;
use rusqlite::params;

/// The revisions of a cluster two or more keys hold, one of them not as a
/// tombstone, read in revision order through `revisions_by_cluster`.
/// Tombstones a run inferred (`deleted_after`) are not etcd's: no revision
/// of etcd's wrote them, so they share it with whatever etcd wrote there.
const SHARED: &str = "SELECT r.mod_revision FROM revisions r \
     WHERE r.cluster_id = ?1 AND r.deleted_after IS NULL \
     GROUP BY r.mod_revision HAVING count(*) > 1 AND min(r.deleted) = 0";

impl crate::store::reader::SharedRevisionReads for Store {
    fn shared_revisions(&self, cluster: i64, limit: usize) -> Result<SharedRevisions, StoreError> {
        let err = |e| self.err(e);
        let total: i64 = self
            .conn
            .query_row(&format!("SELECT count(*) FROM ({SHARED})"), [cluster], |r| {
                r.get(0)
            })
            .map_err(err)?;
        if total == 0 {
            return Ok(SharedRevisions::default());
        }
        let mut stmt = self
            .conn
            .prepare(&format!(
                "WITH shared AS ({SHARED} ORDER BY r.mod_revision LIMIT ?2) \
                 SELECT r.mod_revision, k.key, r.create_revision, r.version, r.deleted \
                 FROM shared s JOIN revisions r ON r.cluster_id = ?1 AND r.mod_revision = s.mod_revision \
                 AND r.deleted_after IS NULL \
                 JOIN keys k ON k.id = r.key_id ORDER BY r.mod_revision, k.key"
            ))
            .map_err(err)?;
        let rows = stmt
            .query_map(params![cluster, limit as i64], |r| {
                let key: Vec<u8> = r.get(1)?;
                Ok((
                    r.get::<_, i64>(0)?,
                    SharedRow {
                        key: String::from_utf8_lossy(&key).into_owned(),
                        create_revision: r.get(2)?,
                        version: r.get(3)?,
                        deleted: r.get(4)?,
                    },
                ))
            })
            .map_err(err)?
            .collect::<Result<Vec<_>, _>>()
            .map_err(err)?;
        Ok(SharedRevisions {
            listed: group(rows),
            total: total as u64,
        })
    }
}
