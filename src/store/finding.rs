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
