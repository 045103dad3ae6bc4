//! Clusters: one row per etcd cluster id, created by the first run that
//! reads it, with the name `--cluster` gave it.

use super::Store;
use crate::decode::gotime::now;
use crate::store::cluster::{Cluster, ClusterName};
use crate::store::StoreError;
use rusqlite::{params, OptionalExtension};

/// The columns [`cluster_at`] reads, over `clusters c`.
pub(super) const CLUSTER_COLUMNS: &str = "c.id, c.etcd_cluster_id, c.name";

impl Store {
    /// The cluster in columns `at`.. of a row selecting [`CLUSTER_COLUMNS`].
    pub(super) fn cluster_at(&self, r: &rusqlite::Row, at: usize) -> Result<Cluster, StoreError> {
        let err = |e| self.err(e);
        Ok(Cluster {
            row: r.get(at).map_err(err)?,
            etcd_cluster_id: r.get(at + 1).map_err(err)?,
            name: self.stored_name(r.get(at + 2).map_err(err)?)?,
        })
    }

    /// A stored name read back: one that is not a name is damage.
    fn stored_name(&self, name: Option<String>) -> Result<Option<ClusterName>, StoreError> {
        name.map(|n| ClusterName::parse(&n).map_err(|e| self.damaged("clusters.name", e)))
            .transpose()
    }
}

impl crate::store::reader::ClusterReads for Store {
    fn clusters(&self) -> Result<Vec<Cluster>, StoreError> {
        let err = |e| self.err(e);
        let mut stmt = self
            .conn
            .prepare(&format!("SELECT {CLUSTER_COLUMNS} FROM clusters c ORDER BY c.id"))
            .map_err(err)?;
        let mut rows = stmt.query([]).map_err(err)?;
        let mut out = Vec::new();
        while let Some(r) = rows.next().map_err(err)? {
            out.push(self.cluster_at(r, 0)?);
        }
        Ok(out)
    }
}

impl crate::store::recorder::ClusterWrites for Store {
    fn cluster(
        &self,
        etcd_cluster_id: &str,
        name: Option<&ClusterName>,
    ) -> Result<(i64, Option<ClusterName>), StoreError> {
        let err = |e| self.err(e);
        self.conn
            .execute(
                "INSERT OR IGNORE INTO clusters (etcd_cluster_id, first_seen) VALUES (?1, ?2)",
                params![etcd_cluster_id, now()],
            )
            .map_err(err)?;
        let (row, had): (i64, Option<String>) = self
            .conn
            .query_row(
                "SELECT id, name FROM clusters WHERE etcd_cluster_id = ?1",
                [etcd_cluster_id],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .map_err(err)?;
        let had = self.stored_name(had)?;
        let Some(name) = name.filter(|n| had.as_ref() != Some(*n)) else {
            return Ok((row, None));
        };
        let holder: Option<String> = self
            .conn
            .query_row(
                "SELECT etcd_cluster_id FROM clusters WHERE name = ?1",
                [name.as_str()],
                |r| r.get(0),
            )
            .optional()
            .map_err(err)?;
        if let Some(holder) = holder {
            return Err(StoreError::Conflict {
                path: self.path.clone(),
                message: format!(
                    "already calls etcd cluster {holder} {name}: etcd cluster {etcd_cluster_id} cannot be {name} too; \
                     give it another --cluster name (or, for a data file of {holder} whose membership changed \
                     since it formed, --cluster-id {holder})"
                ),
            });
        }
        self.conn
            .execute(
                "UPDATE clusters SET name = ?2 WHERE id = ?1",
                params![row, name.as_str()],
            )
            .map_err(err)?;
        Ok((row, had))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::reader::ClusterReads;
    use crate::store::recorder::ClusterWrites;

    #[test]
    fn a_name_is_one_clusters_and_a_new_one_renames() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open_for_writing(&dir.path().join("db.sqlite")).unwrap();
        let name = |n: &str| ClusterName::parse(n).unwrap();
        let (a, _) = store.cluster("aa", Some(&name("prod"))).unwrap();
        assert_eq!(store.cluster("aa", None).unwrap(), (a, None), "no name keeps it");
        assert_eq!(store.cluster("aa", Some(&name("prod"))).unwrap(), (a, None));
        let e = store.cluster("bb", Some(&name("prod"))).unwrap_err().to_string();
        assert!(
            e.contains("already calls etcd cluster aa prod: etcd cluster bb cannot be prod too"),
            "{e}"
        );
        let (b, _) = store.cluster("bb", None).unwrap();
        assert_ne!(a, b);
        assert_eq!(
            store.cluster("aa", Some(&name("staging"))).unwrap(),
            (a, Some(name("prod"))),
            "a rename says what it replaced"
        );
        let labels: Vec<String> = store
            .clusters()
            .unwrap()
            .iter()
            .map(|c| c.label().to_string())
            .collect();
        assert_eq!(labels, ["staging", "bb"]);
        store.cluster("bb", Some(&name("prod"))).unwrap();
    }
}
