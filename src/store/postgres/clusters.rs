//! Clusters: one row per etcd cluster id, created by the first run that
//! reads it, with the name `--cluster` gave it; and the lock that lets one
//! run at a time write a cluster while runs of other clusters go on.

use super::Store;
use crate::decode::gotime::now;
use crate::store::cluster::{Cluster, ClusterName};
use crate::store::StoreError;
use postgres::Row;

/// The columns [`Store::cluster_at`] reads, over `clusters c`.
pub(super) const CLUSTER_COLUMNS: &str = "c.id, c.etcd_cluster_id, c.name";

/// The first key of our advisory locks (the second is the cluster's row):
/// "etcd-ins" in ASCII, so other applications' locks do not collide.
const LOCK_SPACE: i32 = 0x6574_6364;

impl Store {
    /// Takes cluster `row`'s write lock for this session (PostgreSQL frees
    /// it when the session ends, however the process ended), then marks
    /// the runs an earlier holder left `running` interrupted.
    fn lock_cluster(&self, row: i64, etcd_cluster_id: &str) -> Result<(), StoreError> {
        let key = i32::try_from(row)
            .map_err(|_| self.damaged("clusters.id", format!("{row} is past the lock's range")))?;
        let got: bool = self
            .query_opt("SELECT pg_try_advisory_lock($1, $2)", &[&LOCK_SPACE, &key])?
            .expect("a row")
            .get(0);
        if !got {
            let holder = self
                .query_opt(
                    "SELECT id, pid, started_at FROM runs WHERE cluster_id = $1 AND status = 'running' \
                     ORDER BY id DESC LIMIT 1",
                    &[&row],
                )?
                .map(|r| {
                    format!(
                        "run {} (pid {}, started {})",
                        r.get::<_, i64>(0),
                        r.get::<_, i64>(1),
                        r.get::<_, String>(2)
                    )
                })
                .unwrap_or_else(|| "another etcd-inspector session".to_string());
            return Err(StoreError::Conflict {
                path: self.path.clone(),
                message: format!(
                    "is being written for etcd cluster {etcd_cluster_id} by {holder}; \
                     wait for it to finish (runs of other clusters may go on at once)"
                ),
            });
        }
        self.execute(
            "UPDATE runs SET status = 'interrupted', error = coalesce(error, 'the process ended before the run finished') \
             WHERE cluster_id = $1 AND status = 'running'",
            &[&row],
        )?;
        Ok(())
    }

    /// The cluster in columns `at`.. of a row selecting [`CLUSTER_COLUMNS`].
    pub(super) fn cluster_at(&self, r: &Row, at: usize) -> Result<Cluster, StoreError> {
        Ok(Cluster {
            row: r.get(at),
            etcd_cluster_id: r.get(at + 1),
            name: self.stored_name(r.get(at + 2))?,
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
        self.query(
            &format!("SELECT {CLUSTER_COLUMNS} FROM clusters c ORDER BY c.id"),
            &[],
        )?
        .iter()
        .map(|r| self.cluster_at(r, 0))
        .collect()
    }
}

impl crate::store::recorder::ClusterWrites for Store {
    fn cluster(
        &self,
        etcd_cluster_id: &str,
        name: Option<&ClusterName>,
    ) -> Result<(i64, Option<ClusterName>), StoreError> {
        self.execute(
            "INSERT INTO clusters (etcd_cluster_id, first_seen) VALUES ($1, $2) ON CONFLICT (etcd_cluster_id) DO NOTHING",
            &[&etcd_cluster_id, &now()],
        )?;
        let found = self
            .query_opt(
                "SELECT id, name FROM clusters WHERE etcd_cluster_id = $1",
                &[&etcd_cluster_id],
            )?
            .expect("the row just inserted");
        let (row, had): (i64, Option<String>) = (found.get(0), found.get(1));
        self.lock_cluster(row, etcd_cluster_id)?;
        let had = self.stored_name(had)?;
        let Some(name) = name.filter(|n| had.as_ref() != Some(*n)) else {
            return Ok((row, None));
        };
        let holder: Option<String> = self
            .query_opt(
                "SELECT etcd_cluster_id FROM clusters WHERE name = $1",
                &[&name.as_str()],
            )?
            .map(|r| r.get(0));
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
        self.execute(
            "UPDATE clusters SET name = $2 WHERE id = $1",
            &[&row, &name.as_str()],
        )?;
        Ok((row, had))
    }
}
