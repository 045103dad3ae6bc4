//! Who wrote a revision, as the store keeps it: the write requests an audit
//! log recorded (never their bodies), what joining them to the stored
//! revisions found, and what `history` shows of the writer.

use crate::source::Revision;
use crate::store::ClusterId;
use crate::unknown::{find, UnknownName};
use serde::Serialize;

/// One write request, as `attribute` stages it: who, what, when and how it
/// ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AuditRequest {
    pub audit_id: String,
    pub verb: String,
    /// `""` for the core group.
    pub api_group: String,
    pub resource: String,
    pub namespace: Option<String>,
    pub name: Option<String>,
    pub subresource: Option<String>,
    pub user: String,
    pub groups: Vec<String>,
    pub impersonated_user: Option<String>,
    pub user_agent: Option<String>,
    pub source_ips: Vec<String>,
    pub code: Option<u16>,
    /// The audit level the event was logged at (`Metadata`, ...).
    pub level: String,
    pub response_revision: Option<Revision>,
    pub precondition_revision: Option<Revision>,
    /// `stageTimestamp` exactly as the event wrote it.
    pub time: String,
    /// The audit log it was read from: its path, `-` for standard input.
    pub log: String,
}

/// What the join found for a request.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Outcome {
    /// A stored revision is this request's.
    Wrote,
    /// It succeeded and wrote nothing: the apiserver found nothing to change.
    NoOp,
    /// It failed (4xx, 5xx): no write; or it timed out (504), which may
    /// have written, and no revision is known to be its.
    Failed,
    /// It succeeded, but the order cannot tell which revision it wrote.
    Ambiguous,
    /// No stored key or revision it could have written.
    Unmatched,
}

impl Outcome {
    pub const ALL: [Outcome; 5] = [
        Outcome::Wrote,
        Outcome::NoOp,
        Outcome::Failed,
        Outcome::Ambiguous,
        Outcome::Unmatched,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Wrote => "wrote",
            Outcome::NoOp => "no-op",
            Outcome::Failed => "failed",
            Outcome::Ambiguous => "ambiguous",
            Outcome::Unmatched => "unmatched",
        }
    }

    /// The outcome [`Outcome::as_str`] names.
    pub fn parse(name: &str) -> Result<Outcome, UnknownName> {
        find(&Outcome::ALL, Outcome::as_str, "an attribution outcome", name)
    }
}

/// How a revision's writer is known.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Match {
    /// The response carried the revision.
    Exact,
    /// The object's requests and revisions, in order, pair up one to one.
    ByOrder,
}

impl Match {
    pub const ALL: [Match; 2] = [Match::Exact, Match::ByOrder];

    pub fn as_str(self) -> &'static str {
        match self {
            Match::Exact => "exact",
            Match::ByOrder => "by-order",
        }
    }

    /// The match kind [`Match::as_str`] names.
    pub fn parse(name: &str) -> Result<Match, UnknownName> {
        find(&Match::ALL, Match::as_str, "an attribution match", name)
    }
}

/// A staged request of one key, as the join reads it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KeyRequest {
    pub id: i64,
    pub verb: String,
    pub subresource: Option<String>,
    pub code: Option<u16>,
    pub response_revision: Option<Revision>,
    pub precondition_revision: Option<Revision>,
    pub time: jiff::Timestamp,
}

/// A stored revision of one key, as the join reads it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KeyRevision {
    pub mod_revision: Revision,
    pub version: i64,
    pub deleted: bool,
    /// The object's creationTimestamp, when stored.
    pub creation_timestamp: Option<String>,
    /// When the cluster's clock says it was written.
    pub written: crate::store::clock::Interval,
    /// Being deleted with no finalizer left: the apiserver deletes it
    /// next, in the same request that wrote this revision.
    pub deleting: bool,
}

/// What the join decided for one key.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct KeyAttribution {
    /// (request id, outcome) for every request of the key.
    pub outcomes: Vec<(i64, Outcome)>,
    /// (mod_revision, request id, match) for every attributed revision.
    pub writers: Vec<(Revision, i64, Match)>,
    /// Revisions between known writes that requests could have written,
    /// left unattributed because the order could not tell which.
    pub unattributed: u64,
}

/// Who wrote a revision and when, as `history` shows it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct WrittenBy {
    pub user: String,
    pub groups: Vec<String>,
    pub impersonated_user: Option<String>,
    pub user_agent: Option<String>,
    pub source_ips: Vec<String>,
    pub verb: String,
    pub subresource: Option<String>,
    pub audit_id: String,
    /// The event's `stageTimestamp`, as it wrote it.
    pub time: String,
    #[serde(rename = "match")]
    pub match_kind: Match,
}

impl std::fmt::Display for WrittenBy {
    /// `alice (kubectl/v1.31.0) update status`, `, by order` when the
    /// order told it: the user agent's first word, as tables show it.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.user)?;
        if let Some(agent) = &self.user_agent {
            write!(f, " ({})", agent.split_whitespace().next().unwrap_or(agent))?;
        }
        write!(f, " {}", self.verb)?;
        if let Some(s) = &self.subresource {
            write!(f, " {s}")?;
        }
        match self.match_kind {
            Match::Exact => Ok(()),
            Match::ByOrder => write!(f, ", by order"),
        }
    }
}

/// What a join of the staged requests to the stored revisions found.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct JoinSummary {
    /// Requests staged for the cluster, all logs read so far.
    pub requests: u64,
    pub exact: u64,
    pub by_order: u64,
    pub no_op: u64,
    pub failed: u64,
    pub ambiguous: u64,
    /// Revisions those requests could have written, left unattributed.
    pub unattributed_revisions: u64,
    /// Requests for which no stored key or revision matched.
    pub unmatched: u64,
    /// Requests that named a stored key.
    pub keyed: u64,
}

impl JoinSummary {
    /// Counts `n` requests that ended in `outcome`, `keyed` of them naming a
    /// stored key (revisions written are counted by their writers instead).
    pub(in crate::store) fn count(&mut self, outcome: Outcome, n: u64, keyed: u64) {
        self.requests += n;
        self.keyed += keyed;
        match outcome {
            Outcome::Wrote => {}
            Outcome::NoOp => self.no_op = n,
            Outcome::Failed => self.failed = n,
            Outcome::Ambiguous => self.ambiguous = n,
            Outcome::Unmatched => self.unmatched = n,
        }
    }
}

/// The object a request addressed, as the audit log named it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct AuditedObject {
    /// `""` for the core group.
    pub api_group: String,
    pub resource: String,
    pub namespace: Option<String>,
    pub name: String,
    /// The stored key it names, when the database holds one.
    pub key: Option<String>,
}

impl std::fmt::Display for AuditedObject {
    /// `configmaps team-a/app.config`, `deployments.apps web`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let resource = crate::decode::key::qualified(&self.resource, &self.api_group);
        match &self.namespace {
            Some(ns) => write!(f, "{resource} {ns}/{}", self.name),
            None => write!(f, "{resource} {}", self.name),
        }
    }
}

/// One staged request of an object with what the join found, as
/// detectors read it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AuditedRequest {
    pub audit_id: String,
    pub user: String,
    pub user_agent: Option<String>,
    pub verb: String,
    pub subresource: Option<String>,
    pub code: Option<u16>,
    pub outcome: Outcome,
    pub time: jiff::Timestamp,
    /// `stageTimestamp` as the event wrote it.
    pub time_text: String,
    /// The (first) revision it wrote, when attributed.
    pub revision: Option<Revision>,
}

/// Gathers rows ordered by object into each object's requests, in the
/// order they were answered, for `audited_requests`.
pub(in crate::store) struct ByObject<'v> {
    visit: &'v mut dyn FnMut(&AuditedObject, &[AuditedRequest]),
    object: Option<AuditedObject>,
    requests: Vec<AuditedRequest>,
}

impl<'v> ByObject<'v> {
    pub(in crate::store) fn new(visit: &'v mut dyn FnMut(&AuditedObject, &[AuditedRequest])) -> Self {
        ByObject {
            visit,
            object: None,
            requests: Vec::new(),
        }
    }

    /// One row: a request of `object`, which ends the object before it.
    pub(in crate::store) fn push(&mut self, object: AuditedObject, request: AuditedRequest) {
        let same = self.object.as_ref().is_some_and(|o| {
            (&o.api_group, &o.resource, &o.namespace, &o.name)
                == (
                    &object.api_group,
                    &object.resource,
                    &object.namespace,
                    &object.name,
                )
        });
        if !same {
            self.flush();
            self.object = Some(object);
        }
        self.requests.push(request);
    }

    /// Visits the last object.
    pub(in crate::store) fn finish(mut self) {
        self.flush();
    }

    fn flush(&mut self) {
        if let Some(o) = &self.object {
            self.requests
                .sort_by(|a, b| (a.time, &a.audit_id).cmp(&(b.time, &b.audit_id)));
            (self.visit)(o, &self.requests);
        }
        self.requests.clear();
    }
}

/// Stages write requests of one cluster, each `auditID` once however often
/// the logs are read; [`AuditStage::finish`] commits the rest.
pub trait AuditStage {
    /// Stages one request (written with others later).
    fn push(&mut self, request: &AuditRequest) -> Result<(), crate::store::StoreError>;

    /// Requests new to the database so far, the pushed ones written first.
    fn staged(&mut self) -> Result<u64, crate::store::StoreError>;

    /// Commits what is staged.
    fn finish(self: Box<Self>) -> Result<(), crate::store::StoreError>;
}

/// How a backend joins a key's requests to its revisions: the caller's
/// rule, so the store holds no attribution logic.
pub type JoinKey<'a> = dyn Fn(&[KeyRevision], &[KeyRequest]) -> KeyAttribution + 'a;

/// What `attribute` writes.
pub trait AuditRecorder {
    /// Starts staging requests of `cluster`.
    fn stage_audit(&self, cluster: ClusterId) -> Result<Box<dyn AuditStage + '_>, crate::store::StoreError>;

    /// Joins every staged request of `cluster` to its stored revisions
    /// again, key by key, with `join`, replacing what an earlier join found;
    /// all of it or nothing.
    fn join_audit(
        &self,
        cluster: ClusterId,
        join: &JoinKey<'_>,
    ) -> Result<JoinSummary, crate::store::StoreError>;
}

/// The columns [`written_by`] reads, for a query that joins
/// `revision_writers w` and `audit_requests a`.
pub(super) const WRITTEN_BY_COLUMNS: &str =
    "a.audit_id, w.match, a.username, a.groups, a.impersonated_user, \
     a.user_agent, a.source_ips, a.verb, a.subresource, a.time";

/// Who wrote the revision a row holds, from its [`WRITTEN_BY_COLUMNS`]
/// (next in `c`).
pub(super) fn written_by(c: &mut super::sql::Cursor) -> Result<Option<WrittenBy>, super::StoreError> {
    let Some(audit_id) = c.opt_text("audit_requests.audit_id")? else {
        c.skip(9);
        return Ok(None);
    };
    let match_kind = c.parsed("revision_writers.match", Match::parse)?;
    let (user, groups) = (
        c.text("audit_requests.username")?,
        c.json("audit_requests.groups")?,
    );
    let (impersonated_user, user_agent) = (
        c.opt_text("audit_requests.impersonated_user")?,
        c.opt_text("audit_requests.user_agent")?,
    );
    Ok(Some(WrittenBy {
        user,
        groups,
        impersonated_user,
        user_agent,
        source_ips: c.json("audit_requests.source_ips")?,
        verb: c.text("audit_requests.verb")?,
        subresource: c.opt_text("audit_requests.subresource")?,
        audit_id,
        time: c.text("audit_requests.time")?,
        match_kind: match_kind.ok_or_else(|| c.damage("revision_writers.match", "NULL"))?,
    }))
}
