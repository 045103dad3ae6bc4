//! Retention: removing old runs and the revisions only they needed, written
//! once over [`Sql`] for both backends.

use super::recorder::PruneWrites;
use super::sql::{first_row, Sql};
use super::tables::Cell;
use super::StoreError;
use jiff::Timestamp;

/// What a prune removed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Pruned {
    pub runs: i64,
    pub revisions: i64,
    pub keys: i64,
    pub values: i64,
}

impl<T: Sql + ?Sized> PruneWrites for T {
    fn prune(&self, before: Option<Timestamp>, keep: Option<u32>) -> Result<Pruned, StoreError> {
        let mut pruned = Pruned::default();
        self.atomically(&mut || {
            pruned = prune(self, before, keep)?;
            Ok(())
        })?;
        Ok(pruned)
    }

    fn vacuum(&self) -> Result<(), StoreError> {
        Sql::vacuum(self)
    }
}

/// Counts a statement's changed rows as a prune counts them.
fn count(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

/// The prune, in the caller's transaction.
fn prune(
    db: &(impl Sql + ?Sized),
    before: Option<Timestamp>,
    keep: Option<u32>,
) -> Result<Pruned, StoreError> {
    let d = db.dialect();
    let mut pruned = Pruned::default();
    let opt = |v: Option<Cell>| v.unwrap_or(Cell::Null);
    db.temp_table(
        "doomed",
        &format!("(id {} PRIMARY KEY, cluster_id {})", d.int, d.int),
    )?;
    pruned.runs = count(db.execute(
        "INSERT INTO doomed SELECT id, cluster_id FROM runs r WHERE status != 'running' \
         AND (CAST($1 AS bigint) IS NULL OR started_at < CAST($1 AS bigint)) \
         AND (CAST($2 AS bigint) IS NULL OR (SELECT count(*) FROM runs n \
           WHERE n.cluster_id IS NOT DISTINCT FROM r.cluster_id AND n.id > r.id) >= CAST($2 AS bigint)) \
         AND id NOT IN (SELECT max(id) FROM runs WHERE status = 'complete' GROUP BY cluster_id)",
        &[
            opt(before.map(Cell::from)),
            opt(keep.map(|k| Cell::Int(k.into()))),
        ],
    )?);
    let runs = db.typed("runs");
    let clusters = db.rows(
        "runs",
        "SELECT min(id), cluster_id FROM doomed WHERE cluster_id IS NOT NULL GROUP BY cluster_id ORDER BY 1",
        &[],
    )?;
    for cluster in clusters.iter().map(|r| runs.int(&r[1], "cluster_id")) {
        let cluster = Cell::Int(cluster?);
        // The oldest remaining run, and where its view starts.
        let kept = first_row(
            db,
            "runs",
            "SELECT id, coalesce(history_from - 1, head_revision) FROM runs \
             WHERE cluster_id = $1 AND id NOT IN (SELECT id FROM doomed) AND head_revision IS NOT NULL \
             ORDER BY coalesce(history_from - 1, head_revision), id LIMIT 1",
            std::slice::from_ref(&cluster),
            |c| Ok((c.int("id")?, c.int("history_from")?)),
        )?;
        let of_cluster = "key_id IN (SELECT id FROM keys WHERE cluster_id = $1)";
        pruned.revisions += count(match kept {
            Some((oldest, start)) => {
                let removed = db.execute(
                    &format!(
                        "DELETE FROM revisions WHERE {of_cluster} AND mod_revision <= $2 \
                         AND NOT (NOT deleted AND mod_revision = (SELECT max(mod_revision) FROM revisions p \
                           WHERE p.key_id = revisions.key_id AND p.mod_revision <= $2))"
                    ),
                    &[cluster.clone(), Cell::Int(start)],
                )?;
                db.execute(
                    "UPDATE revisions SET run_id = $1 WHERE run_id IN (SELECT id FROM doomed WHERE cluster_id = $2)",
                    &[Cell::Int(oldest), cluster.clone()],
                )?;
                // Generations begun before the cut lost revisions: the
                // unbroken history now starts after it.
                db.execute(
                    &format!(
                        "UPDATE runs SET covered_from = {}(coalesce(covered_from, history_from, 1), CAST($2 AS bigint) + 1) \
                         WHERE cluster_id = $1 AND id NOT IN (SELECT id FROM doomed)",
                        d.greatest
                    ),
                    &[cluster.clone(), Cell::Int(start)],
                )?;
                removed
            }
            None => db.execute(&format!("DELETE FROM revisions WHERE {of_cluster}"), &[cluster])?,
        });
    }
    for table in ["history_gaps", "run_members"] {
        db.execute(
            &format!("DELETE FROM {table} WHERE run_id IN (SELECT id FROM doomed)"),
            &[],
        )?;
    }
    db.execute("DELETE FROM runs WHERE id IN (SELECT id FROM doomed)", &[])?;
    // Who wrote a revision goes with it; a request keeps its row (the audit
    // log said it) but no longer names a removed key.
    db.execute(
        "DELETE FROM revision_writers WHERE NOT EXISTS (SELECT 1 FROM revisions r \
           WHERE r.key_id = revision_writers.key_id AND r.mod_revision = revision_writers.mod_revision)",
        &[],
    )?;
    db.execute(
        "UPDATE audit_requests SET key_id = NULL WHERE key_id IS NOT NULL \
           AND NOT EXISTS (SELECT 1 FROM revisions WHERE key_id = audit_requests.key_id)",
        &[],
    )?;
    pruned.keys = count(db.execute(
        "DELETE FROM keys WHERE NOT EXISTS (SELECT 1 FROM revisions WHERE key_id = keys.id)",
        &[],
    )?);
    // Stored contents no revision uses, deltas before their bases.
    db.temp_table("used", &format!("(hash {} PRIMARY KEY)", d.bytes))?;
    db.execute(
        "INSERT INTO used SELECT semantic_sha256 FROM revisions WHERE semantic_sha256 IS NOT NULL \
         ON CONFLICT DO NOTHING",
        &[],
    )?;
    loop {
        let removed = db.execute(
            "DELETE FROM semantic_values WHERE NOT EXISTS (SELECT 1 FROM used u WHERE u.hash = semantic_values.hash) \
             AND NOT EXISTS (SELECT 1 FROM semantic_values d WHERE d.base = semantic_values.id)",
            &[],
        )?;
        pruned.values += count(removed);
        if removed == 0 {
            break;
        }
    }
    Ok(pruned)
}
