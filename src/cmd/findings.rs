//! `etcd-inspector findings`: the stored findings, printed as they are read.

use super::output::{lines, print_stream, text};
use super::Status;
use crate::cli::FindingsArgs;
use crate::store::HistoryReader;
use crate::store::{FindingQuery, Store};
use anyhow::Result;
use std::path::Path;

pub fn run(db: &Path, args: &FindingsArgs) -> Result<Status> {
    let store = Store::open_for_reading(db)?;
    let query = FindingQuery {
        objects: super::object::object_filter(&store, &args.objects)?,
        detector: args.detector.clone(),
        severity: args.severity,
    };
    print_stream(
        store.findings(&query),
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
