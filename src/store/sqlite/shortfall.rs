//! The stored history checked against a run's source, key by key; and the
//! runs a killed writer left `running`.

use super::Store;
use crate::source::{LiveKey, Revision};
use crate::store::ClusterId;
use crate::store::{Shortfall, StoreError};
use rusqlite::params;

impl Store {
    /// Runs left `running` by a process that no longer holds the lock (killed
    /// or crashed) are marked interrupted. Called with the lock held.
    pub(in crate::store) fn abandon_stale_runs(&self) -> Result<(), StoreError> {
        self.conn
            .execute(
                "UPDATE runs SET status = 'interrupted', error = coalesce(error, 'the process ended before the run finished') \
                 WHERE status = 'running'",
                [],
            )
            .map_err(|e| self.err(e))?;
        Ok(())
    }
}

impl crate::store::recorder::HistoryChecks for Store {
    fn history_shortfall(
        &self,
        cluster: ClusterId,
        covered_from: Revision,
        live: &[LiveKey],
        recorded: &dyn Fn(&[u8]) -> bool,
    ) -> Result<Option<Shortfall>, StoreError> {
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT count(*), max(r.mod_revision) FROM keys k JOIN revisions r ON r.key_id = k.id \
                 WHERE k.cluster_id = ?1 AND k.key = ?2 AND r.create_revision = ?3 AND r.deleted = 0 \
                 AND r.mod_revision <= ?4",
            )
            .map_err(|e| self.err(e))?;
        Shortfall::of(covered_from, live, recorded, |page| {
            page.iter()
                .map(|k| {
                    stmt.query_row(
                        params![cluster, k.key, k.create_revision.0, k.mod_revision.0],
                        |r| Ok((r.get(0)?, r.get::<_, Option<i64>>(1)?.map(Revision))),
                    )
                    .map_err(|e| self.err(e))
                })
                .collect()
        })
    }
}
