//! Aggregates for reports, computed in SQL so memory does not grow with the
//! history.

use super::Store;
use crate::store::Scope;
use crate::store::StoreError;
use rusqlite::params;

/// A [`crate::store::Scope`] as SQL conditions over `r` (revisions) and `k`
/// (keys), with its values bound to ?1..?7 ([`scope_params`]): the revision
/// range, then the object filter's namespace, resource, key prefix,
/// cluster and key.
///
/// It opens with `r.key_id > 0`, true of every row: without it SQLite scans
/// `revisions` through `revisions_by_revision` and looks every row up in
/// the table, whose rows lie in key order; that is a page read per row once
/// the table outgrows the page cache (12× slower on 240,000 revisions). The
/// term makes the table's own key order the scan.
pub(super) const SCOPE: &str =
    "r.key_id > 0 AND (?1 IS NULL OR r.mod_revision >= ?1) AND (?2 IS NULL OR r.mod_revision <= ?2) \
     AND (?3 IS NULL OR k.namespace = ?3) AND (?4 IS NULL OR k.resource = ?4) \
     AND (?5 IS NULL OR substr(k.key, 1, length(?5)) = CAST(?5 AS BLOB)) AND (?6 IS NULL OR k.cluster_id = ?6) \
     AND (?7 IS NULL OR k.key = CAST(?7 AS BLOB))";

/// The values [`SCOPE`] binds, in order.
pub(super) fn scope_params(scope: &Scope) -> [&dyn rusqlite::ToSql; 7] {
    [
        &scope.from_revision,
        &scope.to_revision,
        &scope.objects.namespace,
        &scope.objects.resource,
        &scope.objects.key_prefix,
        &scope.objects.cluster,
        &scope.objects.key,
    ]
}

impl Store {
    /// Stored revisions counted per `label` (grouped by `group`), most
    /// first, at most `limit` rows (`None`: all).
    fn counts(
        &self,
        scope: &Scope,
        label: &str,
        group: &str,
        limit: Option<u32>,
    ) -> Result<Vec<(String, i64)>, StoreError> {
        let err = |e| self.err(e);
        // SQLite's LIMIT takes a negative number for all rows.
        let limit = limit.map_or(-1, i64::from);
        let sql = format!(
            "SELECT coalesce({label}, '-'), count(*) FROM revisions r JOIN keys k ON k.id = r.key_id \
             WHERE {} GROUP BY {group} ORDER BY 2 DESC, 1 LIMIT ?8",
            SCOPE
        );
        let mut stmt = self.conn.prepare(&sql).map_err(err)?;
        let rows = stmt
            .query_map(
                rusqlite::params_from_iter(
                    scope_params(scope)
                        .into_iter()
                        .chain([&limit as &dyn rusqlite::ToSql]),
                ),
                |r| {
                    // Keys are blobs; labels are shown as (lossy) text.
                    let label = match r.get_ref(0)? {
                        rusqlite::types::ValueRef::Blob(b) => String::from_utf8_lossy(b).into_owned(),
                        other => other.as_str()?.to_string(),
                    };
                    Ok((label, r.get(1)?))
                },
            )
            .map_err(err)?;
        rows.collect::<Result<_, _>>().map_err(err)
    }
}

impl crate::store::reader::StatsReads for Store {
    fn revision_at_time(&self, cluster: Option<i64>, time: &str) -> Result<Option<i64>, StoreError> {
        self.conn
            .query_row(
                "SELECT max(head_revision) FROM runs WHERE started_at <= ?1 AND status = 'complete' \
                 AND (?2 IS NULL OR cluster_id = ?2)",
                params![time, cluster],
                |r| r.get(0),
            )
            .map_err(|e| self.err(e))
    }

    fn writes_by_class(&self, scope: &Scope) -> Result<Vec<(String, i64)>, StoreError> {
        self.counts(scope, "r.change_class", "1", None)
    }

    fn writes_by_resource(&self, scope: &Scope) -> Result<Vec<(String, i64)>, StoreError> {
        self.counts(scope, "k.resource", "1", None)
    }

    fn busiest_keys(&self, scope: &Scope, limit: Option<u32>) -> Result<Vec<(String, i64)>, StoreError> {
        self.counts(scope, "k.key", "k.id", limit)
    }
}
