//! Starting a run and ending it: its status, the analysis of a complete
//! run, and the metrics file.

use super::signal::stopping;
use super::{RecordOptions, Summary};
use crate::analyze::Analysis;
use crate::store::ClusterId;
use crate::store::{Backend, RunFact};
use crate::store::{RunId, RunKind, RunStatus, Store, StoreError};
use anyhow::{Context, Result};
use std::path::Path;
use std::time::{Duration, Instant};

/// A run that ended, for the command to report.
#[derive(Debug)]
pub struct Finished {
    pub run: RunId,
    pub status: RunStatus,
    /// What a complete run stored.
    pub summary: Option<Summary>,
    /// Revisions the run added.
    pub added: i64,
    /// What attributing the run's revisions with the audit logs found.
    pub attributed: Option<super::Attributed>,
    /// The detectors' result, when the run was complete and analyzed.
    pub analysis: Option<Analysis>,
    /// Why a failed run failed.
    pub error: Option<anyhow::Error>,
    pub elapsed: Duration,
}

/// Starts a run of `source` in a fresh database handle, with the hash key
/// `options` name (saying so on standard error when it moved out of an
/// older database or is new).
pub(super) fn begin(
    db: &Path,
    (kind, source): (RunKind, String),
    options: &RecordOptions,
) -> Result<(Store, RunId)> {
    crate::decode::schema::load_in_background();
    let store = Store::open_for_writing(db)?;
    if let Some(notice) = store.load_hash_key(&options.hash_key)? {
        tracing::info!("{notice}");
    }
    let run = store.begin_run(kind, &source, &options.prefix, &options.filter.describe())?;
    store.record(run, RunFact::Schema(crate::decode::schema::origin()))?;
    Ok((store, run))
}

/// Attributes the revisions of `cluster` with the run's audit logs.
fn attribute_run(
    store: &dyn Backend,
    cluster: ClusterId,
    options: &RecordOptions,
) -> Result<Option<super::Attributed>> {
    if options.audit_logs.is_empty() {
        return Ok(None);
    }
    let name = store
        .clusters()?
        .into_iter()
        .find(|c| c.row == cluster)
        .context("the run's cluster is missing")?;
    super::attribute::attribute_cluster(store, &options.audit_logs, name).map(Some)
}

/// Why a run whose history is stored and complete is interrupted: a signal
/// came while it was analyzing (the findings are as they were).
const ANALYSIS_INTERRUPTED: &str =
    "interrupted by a signal while analyzing: the history it read is stored and complete; run `etcd-inspector analyze`";

/// Ends the run as its outcome says (`None`: stopped by a signal), runs the
/// analysis of a complete run and writes the metrics file.
pub(super) fn finish(
    store: &dyn Backend,
    run: RunId,
    outcome: Option<Result<Summary>>,
    options: &RecordOptions,
    started: Instant,
) -> Result<Finished> {
    // A stop request ends the run as interrupted, whatever stage it came
    // in (an error that follows it is its doing).
    let outcome = match outcome {
        Some(_) if stopping() => None,
        other => other,
    };
    let mut finished = Finished {
        run,
        status: RunStatus::Interrupted,
        summary: None,
        added: 0,
        attributed: None,
        analysis: None,
        error: None,
        elapsed: Duration::ZERO,
    };
    match outcome {
        Some(Ok(summary)) => {
            finished.added = store.finish_run(run, RunStatus::Complete, summary.keys, None)?;
            finished.status = RunStatus::Complete;
            finished.attributed = attribute_run(store, summary.cluster, options)?;
            if options.analyze {
                crate::stop::stage("analyze");
                match crate::analyze::analyze(store, Some(summary.cluster), &options.detectors) {
                    Ok(analysis) => finished.analysis = Some(analysis),
                    Err(StoreError::Interrupted) => {
                        store.finish_run(
                            run,
                            RunStatus::Interrupted,
                            summary.keys,
                            Some(ANALYSIS_INTERRUPTED),
                        )?;
                        finished.status = RunStatus::Interrupted;
                    }
                    Err(e) => return Err(e.into()),
                }
            }
            finished.summary = Some(summary);
        }
        Some(Err(e)) => {
            let message = crate::error_line::one_line(&e);
            finished.added = store.finish_run(run, RunStatus::Failed, 0, Some(&message))?;
            finished.status = RunStatus::Failed;
            finished.error = Some(e);
        }
        None => {
            finished.added =
                store.finish_run(run, RunStatus::Interrupted, 0, Some("interrupted by a signal"))?;
            // What an interrupted run stored is true history: attribute it.
            if let Some(cluster) = store.run_cluster(run)? {
                finished.attributed = attribute_run(store, cluster, options)?;
            }
        }
    }
    finished.elapsed = started.elapsed();
    if let Some(path) = &options.metrics_file {
        let info = store
            .runs()?
            .into_iter()
            .find(|r| r.id == run)
            .context("the run just recorded is missing")?;
        let all = store.findings(&Default::default());
        let text = crate::report::metrics::render(&info, finished.elapsed.as_secs_f64(), all)?;
        crate::report::metrics::write_atomically(path, &text)
            .with_context(|| format!("cannot write the metrics file {}", path.display()))?;
    }
    Ok(finished)
}
