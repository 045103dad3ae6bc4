//! `etcd-inspector findings`: the stored findings.

use super::output::{lines, print_list, text};
use super::Status;
use crate::cli::FindingsArgs;
use crate::store::HistoryReader;
use crate::store::{ObjectFilter, Store};
use anyhow::Result;
use std::path::Path;

pub fn run(db: &Path, args: &FindingsArgs) -> Result<Status> {
    let store = Store::open_for_reading(db)?;
    let findings: Vec<_> = store
        .findings_for(&ObjectFilter::from(&args.objects))?
        .into_iter()
        .filter(|f| args.detector.as_ref().is_none_or(|d| &f.detector == d))
        .filter(|f| args.severity.is_none_or(|s| f.severity >= s))
        .collect();
    print_list(
        &findings,
        args.output,
        &["severity", "detector", "summary", "keys"],
        |f| {
            vec![
                f.severity.as_str().to_string(),
                text(&f.detector),
                text(&f.summary),
                lines(&f.keys),
            ]
        },
    )?;
    Ok(0)
}
