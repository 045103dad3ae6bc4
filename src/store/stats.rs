//! Aggregates for reports, computed in SQL so memory does not grow with the
//! history.

use super::{Store, StoreError};
use rusqlite::params;

/// Which objects a command looks at (`--namespace`, `--resource`,
/// `--key-prefix`): the one object filter `report`, `diff`, `findings` and
/// the aggregates share. Namespace and resource are the key's, as the run
/// that stored it parsed them with its own prefix.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ObjectFilter {
    pub namespace: Option<String>,
    pub resource: Option<String>,
    pub key_prefix: Option<String>,
}

impl ObjectFilter {
    /// Whether an object with this key, namespace and resource is kept.
    pub fn matches(&self, key: &str, namespace: Option<&str>, resource: Option<&str>) -> bool {
        self.key_prefix
            .as_ref()
            .is_none_or(|p| key.starts_with(p.as_str()))
            && self
                .namespace
                .as_ref()
                .is_none_or(|n| namespace == Some(n.as_str()))
            && self
                .resource
                .as_ref()
                .is_none_or(|r| resource == Some(r.as_str()))
    }

    /// The same conditions in SQL over `k` (keys), with the values for
    /// ?3..?5.
    const SQL: &'static str = "(?3 IS NULL OR k.namespace = ?3) AND (?4 IS NULL OR k.resource = ?4) \
         AND (?5 IS NULL OR substr(k.key, 1, length(?5)) = CAST(?5 AS BLOB))";
}

/// Which revisions an aggregate counts: a revision range and the objects.
#[derive(Clone, Debug, Default)]
pub struct Scope {
    pub from_revision: Option<i64>,
    pub to_revision: Option<i64>,
    pub objects: ObjectFilter,
}

impl Scope {
    /// SQL conditions over `r` (revisions) and `k` (keys), with the values
    /// for ?1..?5.
    pub(super) fn sql(&self) -> String {
        format!(
            "(?1 IS NULL OR r.mod_revision >= ?1) AND (?2 IS NULL OR r.mod_revision <= ?2) AND {}",
            ObjectFilter::SQL
        )
    }
}

impl Store {
    /// Stored revisions counted per `label` (grouped by `group`), most
    /// first, at most `limit` rows (-1: all).
    fn counts(
        &self,
        scope: &Scope,
        label: &str,
        group: &str,
        limit: i64,
    ) -> Result<Vec<(String, i64)>, StoreError> {
        let err = |e| self.err(e);
        let sql = format!(
            "SELECT coalesce({label}, '-'), count(*) FROM revisions r JOIN keys k ON k.id = r.key_id \
             WHERE {} GROUP BY {group} ORDER BY 2 DESC, 1 LIMIT ?6",
            scope.sql()
        );
        let mut stmt = self.conn.prepare(&sql).map_err(err)?;
        let rows = stmt
            .query_map(
                params![
                    scope.from_revision,
                    scope.to_revision,
                    scope.objects.namespace,
                    scope.objects.resource,
                    scope.objects.key_prefix,
                    limit
                ],
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

    /// Stored revisions per change class.
    pub(super) fn read_writes_by_class(&self, scope: &Scope) -> Result<Vec<(String, i64)>, StoreError> {
        self.counts(scope, "r.change_class", "1", -1)
    }

    /// Stored revisions per resource.
    pub(super) fn read_writes_by_resource(&self, scope: &Scope) -> Result<Vec<(String, i64)>, StoreError> {
        self.counts(scope, "k.resource", "1", -1)
    }

    /// The keys with the most stored revisions.
    pub(super) fn read_busiest_keys(
        &self,
        scope: &Scope,
        limit: i64,
    ) -> Result<Vec<(String, i64)>, StoreError> {
        self.counts(scope, "k.key", "k.id", limit)
    }

    /// The stored revision at or before a time, by runs: the head of the
    /// last run that started at or before `time` (RFC 3339).
    pub(super) fn read_revision_at_time(&self, time: &str) -> Result<Option<i64>, StoreError> {
        self.conn
            .query_row(
                "SELECT max(head_revision) FROM runs WHERE started_at <= ?1 AND status = 'complete'",
                [time],
                |r| r.get(0),
            )
            .map_err(|e| self.err(e))
    }
}
