//! A finding: what a detector reports, with the evidence a user needs.

use crate::unknown::{find, UnknownName};
use serde::{Deserialize, Serialize};

/// How much a finding matters.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    Info,
    Low,
    Medium,
    High,
    Critical,
}

impl Severity {
    /// Every severity, lowest first.
    pub const ALL: [Severity; 5] = [
        Severity::Info,
        Severity::Low,
        Severity::Medium,
        Severity::High,
        Severity::Critical,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Info => "info",
            Severity::Low => "low",
            Severity::Medium => "medium",
            Severity::High => "high",
            Severity::Critical => "critical",
        }
    }

    pub fn parse(name: &str) -> Result<Severity, UnknownName> {
        find(&Severity::ALL, Severity::as_str, "a severity", name)
    }
}

/// One finding.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Finding {
    pub detector: &'static str,
    pub severity: Severity,
    /// The etcd keys involved.
    pub keys: Vec<String>,
    /// The revisions that are the evidence.
    pub revisions: Vec<i64>,
    /// One line a person reads first.
    pub summary: String,
    /// Everything else, for reports and programs.
    pub details: serde_json::Value,
}

/// A stored finding.
#[derive(Clone, Debug, Serialize)]
pub struct StoredFinding {
    pub id: i64,
    /// The cluster's name, or etcd's cluster id when it has none.
    pub cluster: String,
    /// etcd's cluster id (hex).
    pub cluster_id: String,
    pub detector: String,
    pub severity: Severity,
    pub keys: Vec<String>,
    pub revisions: Vec<i64>,
    pub summary: String,
    pub details: serde_json::Value,
    pub analyzed_at: String,
    /// Who wrote the revisions it names (of its first key), once
    /// `attribute` knows: revision → writer.
    #[serde(skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub written_by: std::collections::BTreeMap<i64, super::audit::WrittenBy>,
}

/// Which stored findings to read: those naming at least one key the object
/// filter keeps, of one detector, at or above a severity.
#[derive(Clone, Debug, Default)]
pub struct FindingQuery {
    pub objects: super::ObjectFilter,
    pub detector: Option<String>,
    pub severity: Option<Severity>,
}

/// How many findings one detector has in one cluster (its row id).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FindingCount {
    pub cluster: i64,
    pub detector: String,
    pub count: i64,
}

/// Stored findings as they are read, most severe first, then oldest first:
/// a page at a time, so that any number of them fits in bounded memory.
pub type FindingIter<'s> = Box<dyn Iterator<Item = Result<StoredFinding, super::StoreError>> + 's>;

/// Replaces the stored findings of some detectors for one cluster with the
/// findings put into it, as they come: one stored before keeps its id, one
/// not put again is removed when the writer commits. Nothing is visible
/// before [`FindingsWriter::commit`]; a writer dropped without it changes
/// nothing.
pub trait FindingsWriter {
    fn put(&mut self, finding: &Finding) -> Result<(), super::StoreError>;

    /// Makes the new findings the stored ones.
    fn commit(self: Box<Self>) -> Result<(), super::StoreError>;
}
