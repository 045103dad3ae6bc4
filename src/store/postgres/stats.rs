//! Aggregates for reports, computed in SQL so memory does not grow with the
//! history.

use super::Store;
use crate::store::Scope;
use crate::store::StoreError;
use postgres::types::{ToSql, Type};

/// A [`Scope`] as SQL conditions over `r` (revisions) and `k` (keys), with
/// its values bound to $1..$7 ([`scope_params`]): the revision range, then
/// the object filter's namespace, resource, key prefix, cluster and key.
/// Every use of a parameter is cast, since a NULL alone has no type. Keys
/// are bytes: the prefix and key compare as their UTF-8. The cluster is
/// asked of both tables, so that each is read through its cluster's index
/// (the key's cluster is the revision's).
pub(super) const SCOPE: &str = "($1::bigint IS NULL OR r.mod_revision >= $1::bigint) \
     AND ($2::bigint IS NULL OR r.mod_revision <= $2::bigint) \
     AND ($3::text IS NULL OR k.namespace = $3::text) AND ($4::text IS NULL OR k.resource = $4::text) \
     AND ($5::text IS NULL OR substr(k.key, 1, octet_length($5::text)) = convert_to($5::text, 'UTF8')) \
     AND ($6::bigint IS NULL OR (r.cluster_id = $6::bigint AND k.cluster_id = $6::bigint)) \
     AND ($7::text IS NULL OR k.key = convert_to($7::text, 'UTF8'))";

/// The values [`SCOPE`] binds, in order.
pub(super) fn scope_params(scope: &Scope) -> [&(dyn ToSql + Sync); 7] {
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
    /// first, at most `limit` rows (`None`: all). Labels sort bytewise, as
    /// SQLite's do (`COLLATE "C"` for text).
    fn counts(
        &self,
        scope: &Scope,
        label: &str,
        group: &str,
        limit: Option<u32>,
    ) -> Result<Vec<(String, i64)>, StoreError> {
        let sql = format!(
            "SELECT coalesce({label}, '-'), count(*) FROM revisions r JOIN keys k ON k.id = r.key_id \
             WHERE {SCOPE} GROUP BY {group} ORDER BY 2 DESC, 1 LIMIT $8"
        );
        let limit = limit.map(i64::from);
        let params: Vec<&(dyn ToSql + Sync)> = scope_params(scope).into_iter().chain([&limit as _]).collect();
        self.query(&sql, &params)?
            .iter()
            .map(|r| {
                // Keys are bytes; labels are shown as (lossy) text.
                let label = match *r.columns()[0].type_() {
                    Type::BYTEA => {
                        String::from_utf8_lossy(r.try_get::<_, &[u8]>(0).map_err(|e| self.err(e))?)
                            .into_owned()
                    }
                    _ => r.try_get(0).map_err(|e| self.err(e))?,
                };
                Ok((label, r.try_get(1).map_err(|e| self.err(e))?))
            })
            .collect()
    }
}

impl crate::store::reader::StatsReads for Store {
    fn revision_at_time(&self, cluster: Option<i64>, time: &str) -> Result<Option<i64>, StoreError> {
        let row = self.query_opt(
            r#"SELECT max(head_revision) FROM runs WHERE started_at COLLATE "C" <= $1 AND status = 'complete'
               AND ($2::bigint IS NULL OR cluster_id = $2::bigint)"#,
            &[&time, &cluster],
        )?;
        row.map_or(Ok(None), |r| r.try_get(0).map_err(|e| self.err(e)))
    }

    fn writes_by_class(&self, scope: &Scope) -> Result<Vec<(String, i64)>, StoreError> {
        self.counts(scope, r#"r.change_class COLLATE "C""#, "1", None)
    }

    fn writes_by_resource(&self, scope: &Scope) -> Result<Vec<(String, i64)>, StoreError> {
        self.counts(scope, r#"k.resource COLLATE "C""#, "1", None)
    }

    fn busiest_keys(&self, scope: &Scope, limit: Option<u32>) -> Result<Vec<(String, i64)>, StoreError> {
        self.counts(scope, "k.key", "k.id", limit)
    }
}
