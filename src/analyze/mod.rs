//! Detectors: pure functions from stored, classified history to findings.
//! `analyze` first gives every new revision its change class, then runs each
//! detector over the history of the keys it cares about.

pub mod encoding_only;
pub mod finding;
pub mod rewrite;

use crate::store::{ClassifyStats, Store, StoreError};
use finding::Finding;

/// What an `analyze` did.
#[derive(Clone, Debug, Default)]
pub struct Analysis {
    pub classify: ClassifyStats,
    pub findings: Vec<Finding>,
}

/// Classifies pending revisions, then runs the detectors for `cluster` (or
/// every cluster) and stores their findings, replacing earlier ones.
pub fn analyze(store: &Store, cluster: Option<i64>) -> Result<Analysis, StoreError> {
    let classify = store.classify_pending()?;
    let clusters = match cluster {
        Some(c) => vec![c],
        None => store.clusters()?,
    };
    let mut all = Vec::new();
    for c in clusters {
        let mut findings = Vec::new();
        store.classified_history(c, &["rewrite", "encoding-only"], &mut |history| {
            findings.extend(rewrite::detect(history));
            findings.extend(encoding_only::detect(history));
        })?;
        store.replace_findings(c, &[rewrite::NAME, encoding_only::NAME], &findings)?;
        all.extend(findings);
    }
    Ok(Analysis {
        classify,
        findings: all,
    })
}
