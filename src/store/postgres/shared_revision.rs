//! Revisions more than one stored key holds (see
//! [`crate::store::shared_revision`]).

use super::Store;
use crate::store::shared_revision::{group, SharedRevisions, SharedRow};
use crate::store::StoreError;

/// See the SQLite backend's `SHARED`.
const SHARED: &str = "SELECT r.mod_revision FROM revisions r \
     WHERE r.cluster_id = $1 AND r.deleted_after IS NULL \
     GROUP BY r.mod_revision HAVING count(*) > 1 AND bool_and(r.deleted) = false";

impl crate::store::reader::SharedRevisionReads for Store {
    fn shared_revisions(&self, cluster: i64, limit: usize) -> Result<SharedRevisions, StoreError> {
        let total: i64 = self.query(&format!("SELECT count(*) FROM ({SHARED}) s"), &[&cluster])?[0].get(0);
        if total == 0 {
            return Ok(SharedRevisions::default());
        }
        let rows = self.query(
            &format!(
                "WITH shared AS ({SHARED} ORDER BY r.mod_revision LIMIT $2) \
                 SELECT r.mod_revision, k.key, r.create_revision, r.version, r.deleted \
                 FROM shared s JOIN revisions r ON r.cluster_id = $1 AND r.mod_revision = s.mod_revision \
                 AND r.deleted_after IS NULL \
                 JOIN keys k ON k.id = r.key_id ORDER BY r.mod_revision, k.key"
            ),
            &[&cluster, &(limit as i64)],
        )?;
        Ok(SharedRevisions {
            listed: group(rows.iter().map(|r| {
                let key: Vec<u8> = r.get(1);
                (
                    r.get::<_, i64>(0),
                    SharedRow {
                        key: String::from_utf8_lossy(&key).into_owned(),
                        create_revision: r.get(2),
                        version: r.get(3),
                        deleted: r.get(4),
                    },
                )
            })),
            total: total as u64,
        })
    }
}
