//! `etcd-inspector analyze`: change classes and detector findings.

use super::common::{analysis_summary, chosen_cluster, fail_on_status};
use super::Status;
use crate::analyze::analyze;
use crate::cli::AnalyzeArgs;
use crate::report::escape::terminal;
use crate::store::{RunId, Store};
use anyhow::{bail, Result};
use std::path::Path;

pub fn run(db: &Path, args: &AnalyzeArgs) -> Result<Status> {
    let store = Store::open_existing_for_writing(db)?;
    let cluster = match args.run {
        Some(run) => match store.run_cluster(RunId(run))? {
            Some(c) => Some(c),
            None => bail!(
                "run {run} is not in {} or never reached its cluster",
                store.location().display()
            ),
        },
        None => chosen_cluster(&*store, &args.cluster)?.map(|c| c.row),
    };
    let analysis = analyze(&*store, cluster, &(&args.detectors).into())?;
    tracing::info!("{}", terminal(&analysis_summary(&analysis)));
    Ok(fail_on_status(
        args.fail_on,
        analysis.findings.by_severity.keys().copied(),
    ))
}
