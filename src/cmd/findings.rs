//! `etcd-inspector findings`: the stored findings, printed as they are read.

use super::common::chosen_cluster;
use super::output::{lines, print_stream, text, Column, Layout, Shown};
use super::Status;
use crate::cli::FindingsArgs;
use crate::store::{FindingQuery, Store};
use anyhow::Result;
use std::path::Path;

pub fn run(db: &Path, args: &FindingsArgs) -> Result<Status> {
    let store = Store::open_for_reading(db)?;
    let cluster = chosen_cluster(&*store, &args.cluster)?;
    let query = FindingQuery {
        objects: super::common::object::object_filter(&store, &args.objects, cluster.map(|c| c.row))?,
        detector: args.detector.clone(),
        severity: args.severity,
    };
    let names = super::common::object::names_for(&store, &args.output)?;
    let layout = Layout {
        format: &args.output,
        headers: !args.no_headers,
        clusters: super::common::clusters_listed(&*store, &args.cluster)?,
    };
    print_stream(
        store.findings(&query),
        &layout,
        &[
            Column("cluster", Shown::Clusters),
            Column("severity", Shown::Always),
            Column("detector", Shown::Always),
            Column("summary", Shown::Always),
            Column("keys", Shown::Wide),
        ],
        |f| {
            vec![
                text(&f.cluster),
                f.severity.as_str().to_string(),
                text(&f.detector),
                text(&f.summary),
                lines(&f.keys),
            ]
        },
        |f| f.keys.iter().map(|k| names.printed_name(k)).collect(),
    )?;
    Ok(0)
}
