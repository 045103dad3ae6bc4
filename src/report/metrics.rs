//! A run's outcome as Prometheus metrics (text exposition format), for a
//! node-exporter textfile collector: run status, duration, revisions added,
//! history lost to compaction, and the cluster's findings by detector and
//! severity.

use super::escape::prometheus_label as label;
use crate::source::Revision;
use crate::store::{RunInfo, RunStatus, StoreError, StoredFinding};
use std::collections::BTreeMap;
use std::fmt::Write;
use std::io;
use std::path::Path;

/// The labels every series has: etcd's cluster id and the cluster's name
/// (`--cluster`; the id again when it has none), for alerts across a fleet.
fn cluster_labels(cluster_id: &str, name: &str) -> String {
    format!(
        "cluster=\"{}\",cluster_name=\"{}\"",
        label(cluster_id),
        label(name)
    )
}

fn family(out: &mut String, name: &str, kind: &str, help: &str) {
    let _ = writeln!(out, "# HELP etcd_inspector_{name} {help}");
    let _ = writeln!(out, "# TYPE etcd_inspector_{name} {kind}");
}

/// The metrics text for a finished run, `seconds` long; `findings` are the
/// stored findings of every cluster as they are read (those of the run's
/// cluster are counted).
pub fn render(
    run: &RunInfo,
    seconds: f64,
    findings: impl Iterator<Item = Result<StoredFinding, StoreError>>,
) -> Result<String, StoreError> {
    let cluster = run.cluster_id.clone().unwrap_or_default();
    let c = cluster_labels(&cluster, run.cluster.as_deref().unwrap_or(&cluster));
    let mut out = String::new();
    family(
        &mut out,
        "run_status",
        "gauge",
        "1 for the status the last run ended with.",
    );
    for status in [RunStatus::Complete, RunStatus::Failed, RunStatus::Interrupted] {
        let _ = writeln!(
            out,
            "etcd_inspector_run_status{{{c},status=\"{}\"}} {}",
            status.as_str(),
            u8::from(run.status == status)
        );
    }
    let gap_revisions: i64 = run.gaps.iter().map(|g| g.to_revision - g.from_revision + 1).sum();
    let finished = jiff::Timestamp::now().as_second();
    for (name, help, value) in [
        ("run_id", "Id of the last run in the database.", run.id.0 as f64),
        ("run_duration_seconds", "How long the last run took.", seconds),
        (
            "run_revisions_added",
            "Revisions the last run stored that were not stored before.",
            run.revisions_added as f64,
        ),
        (
            "run_keys",
            "Keys under the prefix at the last run's head.",
            run.keys_seen as f64,
        ),
        (
            "run_head_revision",
            "etcd revision the last run read up to.",
            run.head_revision.unwrap_or_default().0 as f64,
        ),
        (
            "run_history_gap_revisions",
            "Revisions lost to compaction before the last run could read them.",
            gap_revisions as f64,
        ),
        (
            "run_finished_timestamp_seconds",
            "Unix time the last run ended.",
            finished as f64,
        ),
    ] {
        family(&mut out, name, "gauge", help);
        let _ = writeln!(out, "etcd_inspector_{name}{{{c}}} {value}");
    }
    let mut counts: BTreeMap<(String, &str), usize> = BTreeMap::new();
    for f in findings {
        let f = f?;
        if f.cluster_id == cluster {
            *counts.entry((f.detector, f.severity.as_str())).or_default() += 1;
        }
    }
    family(
        &mut out,
        "findings",
        "gauge",
        "Stored findings by detector and severity.",
    );
    for ((detector, severity), n) in counts {
        let _ = writeln!(
            out,
            "etcd_inspector_findings{{{c},detector=\"{}\",severity=\"{severity}\"}} {n}",
            label(&detector)
        );
    }
    Ok(out)
}

/// What a `follow` run is doing, written while it runs (the metrics of the
/// finished run replace it when it ends).
#[derive(Clone, Copy, Debug)]
pub struct Following<'a> {
    /// etcd's cluster id.
    pub cluster: &'a str,
    /// The cluster's name (its id when it has none).
    pub name: &'a str,
    /// Everything up to this revision is stored.
    pub complete_through: Revision,
    /// No member delivers the watch: the run waits for one.
    pub stalled: bool,
}

/// The metrics text of a `follow` run that is still running.
pub fn render_following(f: &Following<'_>) -> String {
    let c = cluster_labels(f.cluster, f.name);
    let mut out = String::new();
    let now = jiff::Timestamp::now().as_second();
    for (name, help, value) in [
        (
            "follow_stalled",
            "1 while follow cannot watch (no etcd member delivers), 0 while it records.",
            i64::from(f.stalled),
        ),
        (
            "follow_complete_through_revision",
            "etcd revision up to which follow has stored everything.",
            f.complete_through.0,
        ),
        (
            "follow_updated_timestamp_seconds",
            "Unix time follow last wrote these metrics.",
            now,
        ),
    ] {
        family(&mut out, name, "gauge", help);
        let _ = writeln!(out, "etcd_inspector_{name}{{{c}}} {value}");
    }
    out
}

/// Writes `text` to `path` atomically: a temporary file beside it, synced,
/// then renamed over it, so a collector never reads half a file.
pub fn write_atomically(path: &Path, text: &str) -> io::Result<()> {
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir)?;
    let name = path
        .file_name()
        .ok_or_else(|| io::Error::other("not a file name"))?;
    let tmp = dir.join(format!(".{}.{}.tmp", name.to_string_lossy(), std::process::id()));
    let result = (|| {
        let mut file = std::fs::File::create(&tmp)?;
        io::Write::write_all(&mut file, text.as_bytes())?;
        file.sync_all()?;
        std::fs::rename(&tmp, path)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}
