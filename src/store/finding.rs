//! A finding: what a detector reports, with the evidence a user needs.

use crate::source::Revision;
use crate::store::ClusterId;
use crate::unknown::{find, UnknownName};
use serde::{Deserialize, Serialize};
use std::collections::{HashMap, VecDeque};

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
    pub revisions: Vec<Revision>,
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
    pub revisions: Vec<Revision>,
    pub summary: String,
    pub details: serde_json::Value,
    pub analyzed_at: jiff::Timestamp,
    /// Who wrote the revisions it names (of its first key), once
    /// `attribute` knows: revision → writer.
    #[serde(skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub written_by: std::collections::BTreeMap<Revision, super::audit::WrittenBy>,
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
    pub cluster: ClusterId,
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

/// The stored findings a [`FindingsWriter`] replaces, kept once for every
/// backend. A finding put again takes over the stored row with its
/// identity (detector, keys and revisions; never its wording, which may
/// change between releases or as evidence grows), so its id stays; where
/// several share one identity they are taken oldest first, in the order a
/// detector puts them. What no finding took over is removed at commit.
#[derive(Default)]
pub(in crate::store) struct Replaced {
    /// Row id and digest of what it says, oldest first, by identity.
    by_identity: HashMap<[u8; 32], VecDeque<(i64, [u8; 32])>>,
}

/// A stored finding as [`Replaced::stored`] takes it.
pub(in crate::store) struct StoredRow<'a> {
    pub id: i64,
    pub detector: &'a str,
    pub keys: &'a str,
    pub revisions: &'a str,
    pub severity: &'a str,
    pub summary: &'a str,
    pub details: &'a str,
}

/// A finding's columns as stored: keys, revisions and details as JSON.
pub(in crate::store) struct FindingColumns {
    pub keys: String,
    pub revisions: String,
    pub details: String,
}

impl FindingColumns {
    pub(in crate::store) fn of(f: &Finding) -> FindingColumns {
        FindingColumns {
            keys: serde_json::to_string(&f.keys).expect("a list of strings is JSON"),
            revisions: serde_json::to_string(&f.revisions).expect("a list of numbers is JSON"),
            details: f.details.to_string(),
        }
    }
}

/// What a finding put again does to the stored row it takes over.
pub(in crate::store) enum Kept {
    /// Nothing it says changed.
    AsIs,
    /// Its severity, summary or details changed: the row is rewritten.
    Rewritten(i64),
}

impl Replaced {
    /// A stored finding of the detectors replaced, read in id order.
    pub(in crate::store) fn stored(&mut self, row: StoredRow<'_>) {
        let said = said(row.severity, row.summary, row.details);
        self.by_identity
            .entry(identity(row.detector, row.keys, row.revisions))
            .or_default()
            .push_back((row.id, said));
    }

    /// The stored row `f` (stored as `columns`) takes over, if any.
    pub(in crate::store) fn take(&mut self, f: &Finding, columns: &FindingColumns) -> Option<Kept> {
        let key = identity(f.detector, &columns.keys, &columns.revisions);
        let rows = self.by_identity.get_mut(&key)?;
        let (id, was) = rows.pop_front()?;
        if rows.is_empty() {
            self.by_identity.remove(&key);
        }
        let now = said(f.severity.as_str(), &f.summary, &columns.details);
        Some(if now == was {
            Kept::AsIs
        } else {
            Kept::Rewritten(id)
        })
    }

    /// The rows no finding took over.
    pub(in crate::store) fn left(&self) -> Vec<i64> {
        self.by_identity.values().flatten().map(|(id, _)| *id).collect()
    }
}

fn digest(parts: [&str; 3]) -> [u8; 32] {
    use sha2::{Digest, Sha256};
    let mut h = Sha256::new();
    for part in parts {
        h.update(part.as_bytes());
        h.update([0]);
    }
    h.finalize().into()
}

/// What tells one finding from another: its detector, keys and revisions.
fn identity(detector: &str, keys: &str, revisions: &str) -> [u8; 32] {
    digest([detector, keys, revisions])
}

/// What a finding says.
fn said(severity: &str, summary: &str, details: &str) -> [u8; 32] {
    digest([severity, summary, details])
}

/// The JSON columns of a stored finding, read back.
pub(in crate::store) struct StoredJson {
    pub keys: Vec<String>,
    pub revisions: Vec<Revision>,
    pub details: serde_json::Value,
}

/// A stored finding's keys, revisions and details from their JSON text; a
/// damaged one as its column (`findings.keys`) and the problem.
pub(in crate::store) fn stored_json(
    keys: &str,
    revisions: &str,
    details: &str,
) -> Result<StoredJson, (&'static str, String)> {
    let json = |stored: &str, column| {
        serde_json::from_str::<serde_json::Value>(stored)
            .map_err(|e| (column, format!("{stored:?} is not JSON ({e})")))
    };
    let keys = json(keys, "findings.keys")?;
    let revisions = json(revisions, "findings.revisions")?;
    let details = json(details, "findings.details")?;
    Ok(StoredJson {
        keys: serde_json::from_value(keys.clone())
            .map_err(|_| ("findings.keys", format!("{keys} is not a list of keys")))?,
        revisions: serde_json::from_value(revisions.clone()).map_err(|_| {
            (
                "findings.revisions",
                format!("{revisions} is not a list of revisions"),
            )
        })?,
        details,
    })
}
