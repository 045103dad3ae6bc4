//! Counts for reports (`stats`, the report's summaries), computed in SQL
//! written once over [`Sql`], so memory does not grow with the history.

use super::reader::StatsReads;
use super::sql::{one_row, scope_cells, Sql};
use super::tables::Cell;
use super::{Scope, StoreError};
use crate::source::Revision;
use crate::store::ClusterId;
use jiff::Timestamp;

impl<T: Sql + ?Sized> StatsReads for T {
    fn revision_at_time(
        &self,
        cluster: Option<ClusterId>,
        time: Timestamp,
    ) -> Result<Option<Revision>, StoreError> {
        let sql = "SELECT max(head_revision) FROM runs WHERE started_at <= $1 \
             AND status = 'complete' AND (CAST($2 AS bigint) IS NULL OR cluster_id = CAST($2 AS bigint))";
        let cluster = cluster.map_or(Cell::Null, Cell::from);
        one_row(self, "runs", sql, &[Cell::from(time), cluster], |c| {
            c.opt_revision("head_revision")
        })
    }

    fn writes_by_class(&self, scope: &Scope) -> Result<Vec<(String, i64)>, StoreError> {
        counts(
            self,
            scope,
            &format!("r.change_class{}", self.dialect().byte_order),
            "1",
            None,
        )
    }

    fn writes_by_resource(&self, scope: &Scope) -> Result<Vec<(String, i64)>, StoreError> {
        counts(
            self,
            scope,
            &format!("k.resource{}", self.dialect().byte_order),
            "1",
            None,
        )
    }

    fn busiest_keys(&self, scope: &Scope, limit: Option<u32>) -> Result<Vec<(String, i64)>, StoreError> {
        counts(self, scope, "k.key", "k.id", limit)
    }
}

/// Stored revisions counted per `label` (grouped by `group`), most first,
/// then by label in byte order, at most `limit` rows (`None`: all).
fn counts(
    db: &(impl Sql + ?Sized),
    scope: &Scope,
    label: &str,
    group: &str,
    limit: Option<u32>,
) -> Result<Vec<(String, i64)>, StoreError> {
    let mut params = scope_cells(scope).to_vec();
    let limit = match limit {
        Some(n) => {
            params.push(Cell::Int(n.into()));
            " LIMIT $8"
        }
        None => "",
    };
    let sql = format!(
        "SELECT coalesce({label}, '-'), count(*) FROM revisions r JOIN keys k ON k.id = r.key_id \
         WHERE {} GROUP BY {group} ORDER BY 2 DESC, 1{limit}",
        db.dialect().scope
    );
    let typed = db.typed("revisions");
    let mut counts = Vec::new();
    db.each("revisions", &sql, &params, &mut |row| {
        // Keys are bytes; labels are shown as (lossy) text.
        let label = match &row[0] {
            Cell::Bytes(_) => typed.lossy(&row[0], "key")?,
            other => typed.text(other, label)?,
        };
        counts.push((label, typed.int(&row[1], "count")?));
        Ok(())
    })?;
    Ok(counts)
}
