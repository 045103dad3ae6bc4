//! Detectors: pure functions from stored, classified history to findings.
//! `analyze` first gives every new revision its change class, then reads the
//! history once, key by key and oldest first, holding one key's revisions at
//! a time: key-local detectors run on each key; the revisions the
//! excess-siblings sweep needs are kept aside and swept in revision order.

pub mod arena;
pub mod attribution;
pub mod clock;
pub mod detector;
pub mod drift;
pub mod names;
pub mod objects;

use crate::store::clock::AnchorSink;
use crate::store::Backend;
use crate::store::ClusterId;
use crate::store::{AnalysisReads, ClassifyStats, StoreError, ValueReader};
use detector::{Counts, Findings, Reads, Registration, Setup, Whole};
use std::time::Duration;

/// Declares each detector's module and lists it in [`REGISTRY`]: adding a
/// detector is its file and its name here.
macro_rules! registry {
    ($($detector:ident),* $(,)?) => {
        $(pub mod $detector;)*

        /// Every detector, in the order `analyze` runs them and reports list
        /// them.
        pub const REGISTRY: &[&Registration] = &[$(&$detector::DETECTOR),*];
    };
}

registry![
    rewrite,
    encoding_only,
    recreated,
    excess_siblings,
    duplicate_entries,
    flapping,
    generation_mismatch,
    encryption_at_rest,
    stuck_deletion,
    dangling_owner,
    owner_cycle,
    prunable_fields,
    no_op_writes,
    conflict_storms,
    restored,
    history_invariants,
    foreign_writes,
];

/// The registered detector named `name`.
pub fn registered(name: &str) -> Option<&'static Registration> {
    REGISTRY.iter().copied().find(|r| r.name == name)
}

/// Every detector's name, as [`REGISTRY`] lists them.
pub fn names() -> impl Iterator<Item = &'static str> {
    REGISTRY.iter().map(|r| r.name)
}

/// How the detectors judge.
#[derive(Clone, Debug)]
pub struct Options {
    /// How long a deletion or the garbage collection of a dependent may take
    /// before it is a finding (`--stuck-after`).
    pub stuck_after: Duration,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            stuck_after: stuck_deletion::DEFAULT_STUCK_AFTER,
        }
    }
}

/// What an `analyze` did.
#[derive(Clone, Debug, Default)]
pub struct Analysis {
    pub classify: ClassifyStats,
    /// How many findings each detector and severity has now.
    pub findings: Counts,
    /// Time bounds the clock left out as contradicting the others.
    pub clock_left_out: u64,
}

fn detect_cluster(
    store: &dyn AnalysisReads,
    cluster: ClusterId,
    options: &Options,
    findings: &mut Findings,
    anchors: &mut AnchorSink<'_>,
) -> Result<(), StoreError> {
    let setup = Setup {
        store,
        cluster,
        options,
    };
    let mut detectors = REGISTRY
        .iter()
        .map(|r| r.start(&setup))
        .collect::<Result<Vec<_>, _>>()?;
    let whole_set = REGISTRY.iter().any(|r| r.reads == Reads::ObjectsAndClock);
    let gaps = store.gaps(cluster)?;
    let runs = store.run_times(cluster)?;
    for a in clock::run_anchors(&runs) {
        anchors(a)?;
    }
    let mut clock = clock::Clock::new(&runs);
    let mut objects = objects::Objects::default();
    let mut failure = None;
    store.key_histories(cluster, &mut |history| {
        if failure.is_some() {
            return;
        }
        if crate::stop::requested() {
            failure = Some(StoreError::Interrupted);
            return;
        }
        if let Err(e) = clock::anchors_of(history, anchors) {
            failure = Some(e);
            return;
        }
        if whole_set {
            clock.observe(history);
            if let Err(what) = objects.push(history) {
                failure.get_or_insert(StoreError::Damaged {
                    path: store.location().to_path_buf(),
                    what,
                });
                return;
            }
        }
        // Stored values are read only for the keys that need them.
        let mut values = ValueReader::new(store);
        let mut input = detector::KeyInput {
            history,
            gaps: &gaps,
            values: &mut values,
            store,
        };
        for d in &mut detectors {
            if let Err(e) = d.key(&mut input, findings) {
                failure.get_or_insert(e);
                return;
            }
        }
        if let Err(e) = values.finish() {
            failure.get_or_insert(e);
        }
    })?;
    if let Some(e) = failure {
        return Err(e);
    }
    if REGISTRY.iter().any(|r| r.reads == Reads::AuditRequests) {
        store.audited_requests(cluster, &mut |object, requests| {
            for d in &mut detectors {
                d.audited(object, requests, findings);
            }
        })?;
    }
    clock.finish();
    let whole = Whole {
        objects: &objects,
        clock: &clock,
    };
    for d in detectors {
        d.finish(&whole, findings);
    }
    Ok(())
}

/// Classifies the pending revisions of `cluster` (or every cluster), then runs the detectors for `cluster` (or
/// every cluster) and stores their findings as they are found, replacing
/// the cluster's earlier ones in one transaction; unchanged findings are
/// kept as they were.
pub fn analyze(
    store: &dyn Backend,
    cluster: Option<ClusterId>,
    options: &Options,
) -> Result<Analysis, StoreError> {
    let classify = store.classify_pending(cluster)?;
    let clusters = match cluster {
        Some(c) => vec![c],
        None => store.clusters()?.into_iter().map(|c| c.row).collect(),
    };
    let mut all = Counts::default();
    let mut clock_left_out = 0;
    let detectors: Vec<&str> = names().collect();
    for c in clusters {
        if crate::stop::requested() {
            return Err(StoreError::Interrupted);
        }
        let mut findings = Findings::into_store(store.findings_writer(c, &detectors)?);
        clock_left_out += store.rebuild_clock(c, &mut |anchors| {
            detect_cluster(store, c, options, &mut findings, anchors)
        })?;
        all.add(&findings.commit()?);
    }
    Ok(Analysis {
        classify,
        findings: all,
        clock_left_out,
    })
}
