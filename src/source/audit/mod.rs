//! A streaming reader of kube-apiserver audit logs.
//!
//! [`read`] reads each input in turn (a file, a folder of rotated logs, or
//! stdin) and pushes every audit event it holds into `on_event`, in the
//! order written. It accepts, per line or per file (see "Audit log formats"
//! in `docs/audit-logs.md`):
//! - the log backend's JSON lines, one `audit.k8s.io/v1` (or `v1beta1`)
//!   `Event` per line;
//! - the webhook backend's `EventList`s, one per line or a whole
//!   pretty-printed file;
//! - GKE's Cloud Logging export (`LogEntry` with an `AuditLog`
//!   `protoPayload`), per line or as a JSON array;
//! - EKS's CloudWatch export (`{"message": "<Event>"}` per line, an array of
//!   them, or `aws logs filter-log-events` output);
//!
//! each optionally gzip-compressed (recognised by its magic bytes).
//!
//! Contract: an error from `on_event` stops the read and is returned as it
//! is. A line that is not an audit event (bad JSON, a missing or unknown
//! field, a cut last line) is counted in [`ReadSummary::malformed`], never
//! fatal; an input that cannot be opened or read is an [`AuditError`].
//! Request and response bodies are never kept, nor built: of a response
//! only `metadata.resourceVersion` is read.

mod document;
mod event;
mod files;
mod gke;
mod reader;
mod wire;

#[cfg(test)]
mod tests;

pub use event::{AuditEvent, Level, ObjectRef, Origin, Stage};

use std::fmt;
use std::path::PathBuf;
use std::str::FromStr;

/// One input named by the user: `-` for stdin, else a file or a folder.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AuditInput {
    Stdin,
    Path(PathBuf),
}

impl FromStr for AuditInput {
    type Err = EmptyInput;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "" => Err(EmptyInput),
            "-" => Ok(AuditInput::Stdin),
            path => Ok(AuditInput::Path(PathBuf::from(path))),
        }
    }
}

impl fmt::Display for AuditInput {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AuditInput::Stdin => f.write_str("-"),
            AuditInput::Path(p) => write!(f, "{}", p.display()),
        }
    }
}

/// An empty string given as an audit input.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error("an empty audit input (a path, or - for stdin)")]
pub struct EmptyInput;

/// An input that could not be read; it names the file or folder.
#[derive(Debug, thiserror::Error)]
pub enum AuditError {
    #[error("{path}: {source}")]
    Io { path: PathBuf, source: std::io::Error },
    #[error("{path}: no audit log files (*.log, *.json, *.jsonl, each optionally .gz) in this folder")]
    NoAuditFiles { path: PathBuf },
}

/// At most this many malformed lines are quoted in
/// [`ReadSummary::first_malformed`].
pub const MALFORMED_QUOTED: usize = 10;

/// What a read saw.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct ReadSummary {
    /// Files read (stdin counts as one).
    pub files: u64,
    pub lines: u64,
    /// Events delivered to `on_event`.
    pub events: u64,
    /// Delivered events by [`Stage::index`].
    pub by_stage: [u64; 4],
    /// Lines that are not audit events and are not errors: blank lines.
    pub skipped: u64,
    /// Lines (or items of a list or document) that could not be read as an
    /// audit event.
    pub malformed: u64,
    /// The first [`MALFORMED_QUOTED`] of them, as `FILE:LINE: reason`.
    pub first_malformed: Vec<String>,
}

/// Reads `inputs` in the order given and calls `on_event` with each audit
/// event, in the order written. See the module documentation for the
/// formats, the folder order and what stops a read.
pub fn read(
    inputs: &[AuditInput],
    on_event: impl FnMut(AuditEvent) -> anyhow::Result<()>,
) -> anyhow::Result<ReadSummary> {
    let mut reader = reader::Reader::new(on_event);
    for input in inputs {
        match input {
            AuditInput::Stdin => reader.stream("-", Box::new(std::io::stdin().lock()))?,
            AuditInput::Path(path) => {
                let io = |source| AuditError::Io {
                    path: path.clone(),
                    source,
                };
                if std::fs::metadata(path).map_err(io)?.is_dir() {
                    for file in files::folder_files(path)? {
                        reader.file(&file)?;
                    }
                } else {
                    reader.file(path)?;
                }
            }
        }
    }
    Ok(reader.finish())
}
