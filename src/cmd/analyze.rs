//! `etcd-inspector analyze`: change classes and detector findings.

use super::Status;
use crate::analyze::{analyze, Analysis};
use crate::cli::AnalyzeArgs;
use crate::store::Store;
use anyhow::{bail, Result};
use std::collections::BTreeMap;
use std::path::Path;

/// One line: what was classified and found.
pub fn summary(a: &Analysis) -> String {
    let mut by_detector: BTreeMap<&str, usize> = BTreeMap::new();
    for f in &a.findings {
        *by_detector.entry(f.detector).or_default() += 1;
    }
    let detail: Vec<String> = by_detector.iter().map(|(d, n)| format!("{d}: {n}")).collect();
    format!(
        "analyzed: {} revisions classified (one pass over {} stored revisions), {} findings{}",
        a.classify.classified,
        a.classify.rows_read,
        a.findings.len(),
        if detail.is_empty() {
            String::new()
        } else {
            format!(" ({})", detail.join(", "))
        }
    )
}

pub fn run(db: &Path, args: &AnalyzeArgs) -> Result<Status> {
    let store = Store::open_existing_for_writing(db)?;
    let cluster = match args.run {
        Some(run) => match store.run_cluster(run)? {
            Some(c) => Some(c),
            None => bail!(
                "run {run} is not in {} or never reached its cluster",
                db.display()
            ),
        },
        None => None,
    };
    let analysis = analyze(&store, cluster)?;
    eprintln!("{}", summary(&analysis));
    Ok(super::report::fail_on_status(
        args.fail_on,
        analysis.findings.iter().map(|f| f.severity),
    ))
}
