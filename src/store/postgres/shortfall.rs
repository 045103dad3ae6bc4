//! The stored history checked against a run's source, a page of keys per
//! statement.

use super::Store;
use crate::source::{LiveKey, Revision};
use crate::store::ClusterId;
use crate::store::{Shortfall, StoreError};

impl crate::store::recorder::HistoryChecks for Store {
    fn history_shortfall(
        &self,
        cluster: ClusterId,
        covered_from: Revision,
        live: &[LiveKey],
        recorded: &dyn Fn(&[u8]) -> bool,
    ) -> Result<Option<Shortfall>, StoreError> {
        // Each key is looked up by its unique index (`OFFSET 0` keeps the
        // lookup per key): a cluster's first run asks before the statistics
        // know its keys, and joining instead scanned all of the cluster's
        // keys for each of the page's (10 s a page at 200,000 keys).
        Shortfall::of(covered_from, live, recorded, |page| {
            let keys: Vec<&[u8]> = page.iter().map(|k| k.key.as_slice()).collect();
            let created: Vec<i64> = page.iter().map(|k| k.create_revision.0).collect();
            let modified: Vec<i64> = page.iter().map(|k| k.mod_revision.0).collect();
            Ok(self
                .query(
                    "SELECT count(r.key_id), max(r.mod_revision) \
                     FROM unnest($2::bytea[], $3::bigint[], $4::bigint[]) WITH ORDINALITY AS l (key, created, modified, n) \
                     LEFT JOIN LATERAL (SELECT id FROM keys WHERE cluster_id = $1 AND key = l.key OFFSET 0) k ON true \
                     LEFT JOIN revisions r ON r.key_id = k.id AND r.create_revision = l.created AND NOT r.deleted \
                     AND r.mod_revision <= l.modified \
                     GROUP BY l.n ORDER BY l.n",
                    &[&cluster, &keys, &created, &modified],
                )?
                .iter()
                .map(|r| (r.get(0), r.get::<_, Option<i64>>(1).map(Revision)))
                .collect())
        })
    }
}
