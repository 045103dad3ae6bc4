//! How an object left when its delete fell in revisions compaction removed
//! before a run read them: the words every command and report use.

use crate::store::HistoryRow;

/// `deleted between revisions 100 and 149 (…)` for a tombstone a run
/// inferred, naming the runs that bound it; `None` for any other revision.
pub fn left(row: &HistoryRow) -> Option<String> {
    let after = row.deleted_after?;
    let seen = match row.last_seen_run {
        Some(run) => format!("run {run} saw it at revision {after}"),
        None => format!("it was stored live at revision {after}"),
    };
    Some(format!(
        "deleted between revisions {after} and {} (the delete was compacted away unread: {seen}, run {} found it gone)",
        row.mod_revision, row.run_id
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::source::Revision;

    #[test]
    fn names_the_bounds_and_the_runs() {
        let row = HistoryRow {
            mod_revision: Revision(149),
            deleted: true,
            deleted_after: Some(Revision(100)),
            last_seen_run: Some(1),
            run_id: 2,
            ..Default::default()
        };
        assert_eq!(
            left(&row).unwrap(),
            "deleted between revisions 100 and 149 (the delete was compacted away unread: run 1 saw it at revision 100, run 2 found it gone)"
        );
        let pruned = HistoryRow {
            last_seen_run: None,
            ..row.clone()
        };
        assert!(left(&pruned)
            .unwrap()
            .contains("it was stored live at revision 100, run 2"));
        assert_eq!(
            left(&HistoryRow {
                deleted_after: None,
                ..row
            }),
            None
        );
    }
}
