//! Post-mortem reports: what was recorded, what the detectors found, and a
//! timeline of every key involved, in text, Markdown, JSON or HTML. One file
//! per format; the content is gathered once, here.

pub mod escape;
pub mod html;
pub mod markdown;
pub mod metrics;
pub mod text;

use crate::store::finding::Severity;
use crate::store::HistoryReader;
use crate::store::{HistoryRow, RunInfo, Scope, Store, StoreError, StoredFinding};
use serde::Serialize;
use std::collections::BTreeMap;

/// What a report covers.
#[derive(Clone, Debug, Default)]
pub struct Filter {
    pub scope: Scope,
    /// Only findings at or above this severity.
    pub severity: Option<Severity>,
}

/// Counts for the summary tables.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Summary {
    /// detector → severity → count.
    pub findings: BTreeMap<String, BTreeMap<String, usize>>,
    pub writes_by_class: Vec<(String, i64)>,
    pub writes_by_resource: Vec<(String, i64)>,
    pub busiest_keys: Vec<(String, i64)>,
    /// Stuck deletions, owner problems and prunable fields, each its own line.
    pub lifecycle: Vec<LifecycleLine>,
    /// Per resource, what `stats` shows: objects, revisions, bytes,
    /// encodings, encryption, writes per class.
    pub resources: Vec<crate::store::ResourceUsage>,
}

/// A summary line about objects' lifecycles, from the findings of some
/// detectors.
#[derive(Clone, Debug, Serialize)]
pub struct LifecycleLine {
    pub topic: &'static str,
    pub findings: usize,
    /// The objects involved (`Kind ns/name`).
    pub objects: Vec<String>,
}

/// The lifecycle lines: each topic the registered detectors feed, in
/// registry order, with the detectors that feed it.
fn topics() -> Vec<(&'static str, Vec<&'static str>)> {
    let mut out: Vec<(&'static str, Vec<&'static str>)> = Vec::new();
    for r in crate::analyze::REGISTRY {
        let Some(topic) = r.topic else { continue };
        match out.iter_mut().find(|(t, _)| *t == topic) {
            Some((_, detectors)) => detectors.push(r.name),
            None => out.push((topic, vec![r.name])),
        }
    }
    out
}

fn lifecycle(findings: &[StoredFinding]) -> Vec<LifecycleLine> {
    topics()
        .into_iter()
        .map(|(topic, detectors)| {
            let mine: Vec<&StoredFinding> = findings
                .iter()
                .filter(|f| detectors.contains(&f.detector.as_str()))
                .collect();
            let mut objects: Vec<String> = mine
                .iter()
                .flat_map(|f| {
                    let members = f.details["members"]
                        .as_array()
                        .into_iter()
                        .flatten()
                        .map(|m| &m["object"]);
                    members
                        .chain(std::iter::once(&f.details["object"]))
                        .filter_map(|o| o.as_str())
                        .map(str::to_string)
                })
                .collect();
            objects.sort();
            objects.dedup();
            LifecycleLine {
                topic,
                findings: mine.len(),
                objects,
            }
        })
        .collect()
}

impl LifecycleLine {
    /// `3: ConfigMap shop/a, Namespace doomed, … 1 more`, or `none`.
    pub fn text(&self, shown: usize) -> String {
        if self.findings == 0 {
            return "none".into();
        }
        let more = self.objects.len().saturating_sub(shown);
        let mut names: Vec<&str> = self.objects.iter().take(shown).map(String::as_str).collect();
        let tail = format!("… {more} more");
        if more > 0 {
            names.push(&tail);
        }
        format!("{}: {}", self.findings, names.join(", "))
    }
}

/// A key involved in findings, with its revisions in range.
#[derive(Clone, Debug, Serialize)]
pub struct Timeline {
    pub key: String,
    pub revisions: Vec<HistoryRow>,
}

/// Everything a report shows.
#[derive(Clone, Debug, Serialize)]
pub struct ReportData {
    pub generated_at: String,
    pub database: String,
    pub from_revision: Option<i64>,
    pub to_revision: Option<i64>,
    pub runs: Vec<RunInfo>,
    pub summary: Summary,
    pub findings: Vec<StoredFinding>,
    pub timelines: Vec<Timeline>,
}

fn in_range(rev: i64, scope: &Scope) -> bool {
    scope.from_revision.is_none_or(|f| rev >= f) && scope.to_revision.is_none_or(|t| rev <= t)
}

/// Gathers a report's content. Aggregates come from SQL; only the findings
/// and the histories of the keys they name are held in memory.
pub fn build(store: &Store, filter: &Filter) -> Result<ReportData, StoreError> {
    let scope = &filter.scope;
    let runs: Vec<RunInfo> = store
        .runs()?
        .into_iter()
        .filter(|r| {
            let head = r.head_revision.unwrap_or(0);
            let start = r.history_from.unwrap_or(head);
            scope.from_revision.is_none_or(|f| head >= f) && scope.to_revision.is_none_or(|t| start <= t)
        })
        .collect();
    let findings: Vec<StoredFinding> = store
        .findings_for(&scope.objects)?
        .into_iter()
        .filter(|f| filter.severity.is_none_or(|s| f.severity >= s))
        .filter(|f| f.revisions.is_empty() || f.revisions.iter().any(|r| in_range(*r, scope)))
        .collect();
    let mut summary = Summary {
        writes_by_class: store.writes_by_class(scope)?,
        writes_by_resource: store.writes_by_resource(scope)?,
        busiest_keys: store.busiest_keys(scope, 10)?,
        lifecycle: lifecycle(&findings),
        resources: store.resource_usage(scope, None)?,
        ..Summary::default()
    };
    for f in &findings {
        *summary
            .findings
            .entry(f.detector.clone())
            .or_default()
            .entry(f.severity.as_str().to_string())
            .or_default() += 1;
    }
    let mut keys: Vec<&String> = findings.iter().flat_map(|f| f.keys.first()).collect();
    keys.sort();
    keys.dedup();
    let mut timelines = Vec::new();
    for key in keys {
        let mut rows = store.history(key.as_bytes())?;
        store.add_diffs(&mut rows)?;
        rows.retain(|r| in_range(r.mod_revision, scope));
        timelines.push(Timeline {
            key: key.clone(),
            revisions: rows,
        });
    }
    Ok(ReportData {
        generated_at: crate::decode::gotime::now(),
        database: store.path().display().to_string(),
        from_revision: scope.from_revision,
        to_revision: scope.to_revision,
        runs,
        summary,
        findings,
        timelines,
    })
}

/// A short value for a table cell.
pub fn short(v: &serde_json::Value, max: usize) -> String {
    let s = match v {
        serde_json::Value::String(s) => s.clone(),
        serde_json::Value::Null => "(absent)".into(),
        other => other.to_string(),
    };
    if s.chars().count() > max {
        format!("{}…", s.chars().take(max - 1).collect::<String>())
    } else {
        s
    }
}
