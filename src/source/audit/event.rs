//! The audit event as this crate keeps it: who did what to which object,
//! when, and the revisions the event names. Bodies are never part of it.

use crate::source::Revision;
use crate::unknown::{find, UnknownName};
use std::fmt;
use std::str::FromStr;

/// One audit event, whichever format it was read from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AuditEvent {
    /// `auditID`; for GKE `operation.id` or else `insertId`.
    pub audit_id: String,
    pub stage: Stage,
    pub level: Level,
    /// `create`, `update`, `patch`, `delete`, `get`, `watch`, ...
    pub verb: String,
    /// `user.username` (GKE: `principalEmail`); empty when the event has none.
    pub user: String,
    pub groups: Vec<String>,
    pub impersonated_user: Option<String>,
    pub user_agent: Option<String>,
    pub source_ips: Vec<String>,
    pub object: Option<ObjectRef>,
    /// `responseStatus.code` (GKE: mapped from the google.rpc code).
    pub code: Option<u16>,
    /// metadata.resourceVersion of responseObject, parsed, when the response
    /// carries an object (never the body itself).
    pub response_revision: Option<Revision>,
    /// objectRef.resourceVersion (a PUT's precondition), parsed.
    pub precondition_revision: Option<Revision>,
    /// The stageTimestamp exactly as the event wrote it.
    pub stage_timestamp: String,
    /// `stage_timestamp`, parsed.
    pub time: jiff::Timestamp,
    pub origin: Origin,
}

/// The object a request addressed (`objectRef`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ObjectRef {
    /// `""` for the core group.
    pub api_group: String,
    pub api_version: String,
    pub resource: String,
    pub namespace: Option<String>,
    pub name: Option<String>,
    pub subresource: Option<String>,
}

/// Where an event was read: the file (or `-` for stdin) and its 1-based
/// line; for an item of a multi-line document, the line its item starts on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Origin {
    pub input: String,
    pub line: u64,
}

impl fmt::Display for Origin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.input, self.line)
    }
}

/// The stage of the request an event was written at.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Stage {
    RequestReceived,
    /// Long-running requests only (watch, exec), once the headers are sent.
    ResponseStarted,
    ResponseComplete,
    Panic,
}

impl Stage {
    pub const ALL: [Stage; 4] = [
        Stage::RequestReceived,
        Stage::ResponseStarted,
        Stage::ResponseComplete,
        Stage::Panic,
    ];

    /// The index of this stage in [`Stage::ALL`] and in
    /// [`ReadSummary::by_stage`](super::ReadSummary::by_stage).
    pub fn index(self) -> usize {
        self as usize
    }

    /// The name the audit log writes.
    pub fn as_str(self) -> &'static str {
        match self {
            Stage::RequestReceived => "RequestReceived",
            Stage::ResponseStarted => "ResponseStarted",
            Stage::ResponseComplete => "ResponseComplete",
            Stage::Panic => "Panic",
        }
    }
}

impl FromStr for Stage {
    type Err = UnknownName;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        find(&Stage::ALL, Stage::as_str, "an audit stage", s)
    }
}

impl fmt::Display for Stage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// How much of a request the policy had the apiserver record.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Level {
    None,
    /// Everything but the two bodies.
    Metadata,
    /// Adds `requestObject`.
    Request,
    /// Adds `responseObject`.
    RequestResponse,
}

impl Level {
    pub const ALL: [Level; 4] = [
        Level::None,
        Level::Metadata,
        Level::Request,
        Level::RequestResponse,
    ];

    /// The name the audit log writes.
    pub fn as_str(self) -> &'static str {
        match self {
            Level::None => "None",
            Level::Metadata => "Metadata",
            Level::Request => "Request",
            Level::RequestResponse => "RequestResponse",
        }
    }
}

impl FromStr for Level {
    type Err = UnknownName;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        find(&Level::ALL, Level::as_str, "an audit level", s)
    }
}

impl fmt::Display for Level {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}
