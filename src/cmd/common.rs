//! What several commands share: turning recording flags into the run
//! lifecycle's options, the exit statuses, and the lines a finished run and
//! an analysis print.

use super::Status;
use crate::analyze::Analysis;
use crate::cli::{ObjectArgs, RecordArgs};
use crate::lifecycle::{Finished, RecordOptions};
use crate::report::escape;
use crate::source::filter::ResourceFilter;
use crate::store::finding::Severity;
use crate::store::{ObjectFilter, RunStatus};
use std::collections::BTreeMap;

/// Exit status when `--fail-on` finds findings at or above its severity.
pub const EXIT_FINDINGS: Status = 4;

/// Exit status of a run stopped by Ctrl-C or SIGTERM.
pub const EXIT_INTERRUPTED: Status = 130;

/// The status `--fail-on` asks for, given the severities found.
pub fn fail_on_status(fail_on: Option<Severity>, found: impl IntoIterator<Item = Severity>) -> Status {
    match fail_on {
        Some(level) if found.into_iter().any(|s| s >= level) => EXIT_FINDINGS,
        _ => 0,
    }
}

impl From<&ObjectArgs> for ObjectFilter {
    fn from(a: &ObjectArgs) -> Self {
        ObjectFilter {
            namespace: a.namespace.clone(),
            resource: a.resource.clone(),
            key_prefix: a.key_prefix.clone(),
        }
    }
}

/// The lifecycle's options from the recording flags.
pub fn record_options(args: &RecordArgs) -> RecordOptions {
    RecordOptions {
        prefix: args.prefix.clone(),
        page_size: args.page_size,
        field_depth: args.field_depth.map(usize::from),
        sensitive_paths: args.sensitive_path.clone(),
        filter: ResourceFilter::new(&args.include_resource, &args.exclude_resource),
        analyze: !args.no_analyze,
        metrics_file: args.metrics_file.clone(),
    }
}

/// One line: what was classified and found.
pub fn analysis_summary(a: &Analysis) -> String {
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

/// Prints how a run ended and returns its exit status: 0 complete (4 with
/// findings at or above `fail_on`), 130 interrupted; a failed run is an
/// error naming it.
pub fn report_finished(finished: Finished, fail_on: Option<Severity>) -> anyhow::Result<Status> {
    let run = finished.run.0;
    match finished.status {
        RunStatus::Complete => {
            if let Some(s) = &finished.summary {
                let gaps: String = s
                    .gaps
                    .iter()
                    .map(|g| format!(", history gap: revisions {g} lost to compaction"))
                    .collect();
                eprintln!(
                    "run {run} complete: {} keys at revision {}, {} revisions added (history from revision {}){gaps}, {:.1}s",
                    s.keys,
                    s.head,
                    finished.added,
                    s.history_from,
                    finished.elapsed.as_secs_f64()
                );
            }
            Ok(match &finished.analysis {
                Some(a) => {
                    eprintln!("{}", escape::terminal(&analysis_summary(a)));
                    fail_on_status(fail_on, a.findings.iter().map(|f| f.severity))
                }
                None => 0,
            })
        }
        RunStatus::Interrupted | RunStatus::Running => {
            eprintln!("run {run} interrupted; the revisions stored so far are kept");
            Ok(EXIT_INTERRUPTED)
        }
        RunStatus::Failed => Err(finished
            .error
            .unwrap_or_else(|| anyhow::anyhow!("unknown failure"))
            .context(format!("run {run} failed"))),
    }
}
