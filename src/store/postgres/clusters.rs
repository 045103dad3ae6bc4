//! The lock that lets one run at a time write a cluster while runs of
//! other clusters go on.

use super::Store;
use crate::store::StoreError;

/// The first key of our advisory locks (the second is the cluster's row):
/// "etcd-ins" in ASCII, so other applications' locks do not collide.
const LOCK_SPACE: i32 = 0x6574_6364;

impl Store {
    /// Takes cluster `row`'s write lock for this session (PostgreSQL frees
    /// it when the session ends, however the process ended), then marks
    /// the runs an earlier holder left `running` interrupted.
    pub(super) fn lock_cluster(&self, row: i64, etcd_cluster_id: &str) -> Result<(), StoreError> {
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
                    let started = jiff::Timestamp::from_microsecond(r.get(2));
                    format!(
                        "run {} (pid {}, started {})",
                        r.get::<_, i64>(0),
                        r.get::<_, i64>(1),
                        started.map_or_else(|_| "at an unreadable time".into(), |t| t.to_string())
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
}
