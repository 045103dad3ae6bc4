//! A finding: what a detector reports, with the evidence a user needs.

use serde::{Deserialize, Serialize};

/// How much a finding matters.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    Info,
    Low,
    Medium,
    High,
    Critical,
}

impl Severity {
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Info => "info",
            Severity::Low => "low",
            Severity::Medium => "medium",
            Severity::High => "high",
            Severity::Critical => "critical",
        }
    }

    pub fn parse(s: &str) -> Option<Severity> {
        [
            Severity::Info,
            Severity::Low,
            Severity::Medium,
            Severity::High,
            Severity::Critical,
        ]
        .into_iter()
        .find(|v| v.as_str() == s)
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

/// One classified revision, with what its predecessor was stored as.
#[derive(Clone, Debug, Default)]
pub struct ClassifiedRevision {
    pub key: String,
    pub mod_revision: i64,
    pub class: String,
    pub cause: Option<String>,
    pub kind: Option<String>,
    pub namespace: Option<String>,
    pub name: Option<String>,
    pub encoding: Option<String>,
    pub api_version: Option<String>,
    pub encryption: Option<String>,
    pub prev_encoding: Option<String>,
    pub prev_api_version: Option<String>,
    pub prev_encryption: Option<String>,
}

impl ClassifiedRevision {
    /// `Kind namespace/name`, or the key when the object did not decode.
    pub fn object(&self) -> String {
        match (&self.kind, &self.name) {
            (Some(kind), Some(name)) => match &self.namespace {
                Some(ns) => format!("{kind} {ns}/{name}"),
                None => format!("{kind} {name}"),
            },
            _ => self.key.clone(),
        }
    }
}
