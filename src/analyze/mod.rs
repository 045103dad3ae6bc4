//! Detectors: pure functions from stored, classified history to findings.
//! `analyze` first gives every new revision its change class, then runs each
//! detector over the history of the keys it cares about.

pub mod duplicate_entries;
pub mod encoding_only;
pub mod excess_siblings;
pub mod finding;
pub mod object;
pub mod recreated;
pub mod rewrite;

use crate::canon::duplicates::list_sizes;
use crate::store::{ClassifyStats, ObjectQuery, Store, StoreError};
use finding::Finding;
use object::ObjectRevision;
use std::collections::BTreeMap;

/// Every detector's name.
pub const DETECTORS: &[&str] = &[
    rewrite::NAME,
    encoding_only::NAME,
    recreated::NAME,
    excess_siblings::NAME,
    duplicate_entries::NAME,
];

/// What an `analyze` did.
#[derive(Clone, Debug, Default)]
pub struct Analysis {
    pub classify: ClassifyStats,
    pub findings: Vec<Finding>,
}

/// Calls `per_key` with each key's revisions from a key-ordered stream.
fn by_key(
    store: &Store,
    cluster: i64,
    query: ObjectQuery,
    per_key: &mut dyn FnMut(&[ObjectRevision]),
) -> Result<(), StoreError> {
    let mut current: Vec<ObjectRevision> = Vec::new();
    store.object_revisions(cluster, query, &mut |r| {
        if current.last().is_some_and(|c| c.key != r.key) {
            per_key(&current);
            current.clear();
        }
        current.push(r);
    })?;
    if !current.is_empty() {
        per_key(&current);
    }
    Ok(())
}

fn detect_cluster(store: &Store, cluster: i64) -> Result<Vec<Finding>, StoreError> {
    let mut findings = Vec::new();
    store.classified_history(cluster, &["rewrite", "encoding-only"], &mut |history| {
        findings.extend(rewrite::detect(history));
        findings.extend(encoding_only::detect(history));
    })?;
    by_key(store, cluster, ObjectQuery::Recreated, &mut |history| {
        findings.extend(recreated::detect(history))
    })?;
    let mut sweep = excess_siblings::Sweep::new(excess_siblings::DEFAULT_WINDOW_SECONDS);
    store.object_revisions(cluster, ObjectQuery::Siblings, &mut |r| sweep.push(&r))?;
    findings.extend(sweep.finish());
    let mut keys_with_duplicates: Vec<Vec<ObjectRevision>> = Vec::new();
    by_key(store, cluster, ObjectQuery::Duplicates, &mut |history| {
        keys_with_duplicates.push(history.to_vec())
    })?;
    for history in keys_with_duplicates {
        let mut sizes = BTreeMap::new();
        for r in &history {
            if let Some(value) = r
                .semantic_sha256
                .as_deref()
                .map(|h| store.canonical_value(h))
                .transpose()?
                .flatten()
            {
                sizes.insert(r.mod_revision, list_sizes(&value));
            }
        }
        findings.extend(duplicate_entries::detect(&history, &sizes));
    }
    Ok(findings)
}

/// Classifies pending revisions, then runs the detectors for `cluster` (or
/// every cluster) and stores their findings; unchanged findings are kept as
/// they were.
pub fn analyze(store: &Store, cluster: Option<i64>) -> Result<Analysis, StoreError> {
    let classify = store.classify_pending()?;
    let clusters = match cluster {
        Some(c) => vec![c],
        None => store.clusters()?,
    };
    let mut all = Vec::new();
    for c in clusters {
        let findings = detect_cluster(store, c)?;
        store.replace_findings(c, DETECTORS, &findings)?;
        all.extend(findings);
    }
    Ok(Analysis {
        classify,
        findings: all,
    })
}
