//! `restored`: etcd was restored (its data put back to an older copy) or
//! rewound since a complete run of the cluster: a later run found its head
//! or compaction revision below that run's, keys whose newest write at
//! that run's head differs from what it stored, or, under the cluster's
//! name, another etcd cluster id (see [`crate::store::restore`]). Such a
//! run fails and stores nothing, so the database holds only the earlier
//! timeline; the writes etcd lost, and any it made since, are not in it.
//! High.
//!
//! One finding per earlier run a restore was found against (every run
//! after a restore finds the same one), with the first run that found it.

use super::detector::{Detector, Findings, Make, Reads, Registration, Whole};
use crate::store::finding::{Finding, Severity};
use crate::store::restore::Restore;
use crate::store::RunId;
use serde_json::json;
use std::collections::BTreeMap;

pub const NAME: &str = "restored";

/// Reads the restores the cluster's runs recorded.
pub const DETECTOR: Registration = Registration {
    name: NAME,
    reads: Reads::KeyHistory,
    severity: Severity::High,
    topic: None,
    make: Make::With(|setup| Ok(Box::new(Restores(setup.store.restores(setup.cluster)?)))),
};

/// The restores runs found, by run, oldest first.
struct Restores(Vec<(RunId, Restore)>);

impl Detector for Restores {
    fn finish(self: Box<Self>, _: &Whole<'_>, out: &mut Findings) {
        out.extend(detect(&self.0));
    }
}

/// One finding per earlier run restores were found against.
pub fn detect(restores: &[(RunId, Restore)]) -> Vec<Finding> {
    let mut by_previous: BTreeMap<i64, Vec<(RunId, &Restore)>> = BTreeMap::new();
    for (run, restore) in restores {
        by_previous
            .entry(restore.previous_run)
            .or_default()
            .push((*run, restore));
    }
    by_previous.into_values().map(|found| finding(&found)).collect()
}

/// The finding of the runs in `found` (at least one, oldest first), which
/// found restores against the same earlier run.
fn finding(found: &[(RunId, &Restore)]) -> Finding {
    let (run, first) = found[0];
    let later = match found.len() - 1 {
        0 => String::new(),
        1 => " (and 1 later run)".into(),
        n => format!(" (and {n} later runs)"),
    };
    let mut revisions = vec![first.head, first.previous_head];
    revisions.sort_unstable();
    revisions.dedup();
    Finding {
        detector: NAME,
        severity: Severity::High,
        // The first diverging key, else the prefix the runs read.
        keys: vec![first
            .diverged
            .as_ref()
            .map_or(&first.prefix, |d| &d.key)
            .clone()],
        revisions,
        summary: match &first.etcd_cluster {
            Some(_) => format!(
                "another etcd cluster answered under this cluster's name after run {} (head {}), restored from a \
                 backup into a new cluster or another cluster given its name: run {}{later} found {}",
                first.previous_run,
                first.previous_head,
                run.0,
                first.brief()
            ),
            None => format!(
                "etcd was restored or rewound after run {} (head {}): run {}{later} found {}",
                first.previous_run,
                first.previous_head,
                run.0,
                first.brief()
            ),
        },
        details: json!({
            "previous_run": first.previous_run,
            "runs": found.iter().map(|(r, _)| r.0).collect::<Vec<_>>(),
            "restore": first,
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::source::Revision;

    fn restore(previous_run: i64, head: i64) -> Restore {
        Restore {
            previous_run,
            prefix: "/registry/".into(),
            previous_head: Revision(341),
            previous_compact: Some(Revision(0)),
            head: Revision(head),
            compact: Revision(0),
            diverged: None,
            etcd_cluster: None,
        }
    }

    #[test]
    fn one_finding_per_earlier_run() {
        assert!(detect(&[]).is_empty());
        let found = detect(&[
            (RunId(3), restore(2, 325)),
            (RunId(4), restore(2, 330)),
            (RunId(9), restore(8, 100)),
        ]);
        assert_eq!(found.len(), 2);
        assert_eq!(found[0].severity, Severity::High);
        assert_eq!(found[0].revisions, vec![Revision(325), Revision(341)]);
        assert_eq!(found[0].keys, vec!["/registry/"]);
        assert_eq!(
            found[0].summary,
            "etcd was restored or rewound after run 2 (head 341): run 3 (and 1 later run) found head 341 → 325"
        );
        assert_eq!(found[0].details["runs"], json!([3, 4]));
        assert_eq!(found[1].details["previous_run"], json!(8));
    }
}
