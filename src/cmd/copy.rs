//! `etcd-inspector copy`: runs from one database into another.

use super::common::chosen_cluster;
use super::Status;
use crate::cli::{ClusterArgs, CopyArgs};
use crate::store::copy::{copy, CopyWhich};
use crate::store::Store;
use anyhow::Result;

pub fn run(args: &CopyArgs) -> Result<Status> {
    let from = Store::open_for_reading(&args.from)?;
    let cluster = chosen_cluster(
        &*from,
        &ClusterArgs {
            cluster: args.cluster.clone(),
        },
    )?;
    let which = CopyWhich {
        clusters: cluster.map(|c| vec![c.row.0]),
        runs: (!args.run.is_empty()).then(|| args.run.clone()),
    };
    let to = Store::open_for_writing(&args.to)?;
    let copied = copy(&*from, &*to, &which)?;
    println!(
        "copied {} runs ({} already there), {} revisions, {} stored values, {} findings and {} audit requests from {} into {}",
        copied.runs,
        copied.runs_present,
        copied.revisions,
        copied.contents,
        copied.findings,
        copied.audit_requests,
        from.location().display(),
        to.location().display()
    );
    for cluster in &copied.clusters_to_analyze {
        tracing::warn!(
            "{} has findings of its own for cluster {cluster}: its findings were not copied; run `analyze` on it",
            to.location().display()
        );
    }
    Ok(0)
}
