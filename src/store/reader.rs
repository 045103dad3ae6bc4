//! The read side, as interfaces, one topic trait per file that holds its
//! SQL (`ClusterReads` in `cluster.rs`, `RunReads` in `runs.rs` and so on):
//! written once over [`super::sql::Sql`] for both backends, or in a
//! backend's file of the name where its dialect still differs, and nothing
//! forwards. Consumers take unions of topics: [`AnalysisReads`] is
//! what `analyze` and its detectors read (a cluster's stored history key by
//! key, the values its revisions point at, and what frames it: gaps, run
//! times, restores, the encryption policy, audited requests);
//! [`HistoryReader`] adds what the reading commands (`report`, `stats`,
//! `history`, `diff`, `show`, `runs`, `findings`) show.
use crate::canon::path::FieldPath;
use crate::canon::semantic::FIELD_HASH_LEN;
use crate::decrypt::policy::Policy;
use crate::source::Revision;
use crate::store::audit::{AuditedObject, AuditedRequest};
use crate::store::cluster::Cluster;
use crate::store::finding::{FindingCount, Severity};
use crate::store::object::ObjectRevision;
use crate::store::values::Contents;
use crate::store::ClusterId;
use crate::store::{
    FindingIter, FindingQuery, Gap, HistoryRow, LiveIter, NamedKey, ResourceUsage, RunId, RunInfo, RunTime,
    Scope, StoreError, Usage,
};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::Path;

/// Where the database is, for errors that name it.
pub trait Located {
    /// Where the history is kept, for errors that name it.
    fn location(&self) -> &Path;
}

/// The clusters a database holds.
pub trait ClusterReads {
    /// Every cluster the database holds, in the order first seen.
    fn clusters(&self) -> Result<Vec<Cluster>, StoreError>;
}

/// What runs recorded about themselves.
pub trait RunReads {
    /// Every run, oldest first.
    fn runs(&self) -> Result<Vec<RunInfo>, StoreError>;

    /// When each run of `cluster` started and finished, and its head.
    fn run_times(&self, cluster: ClusterId) -> Result<Vec<RunTime>, StoreError>;

    /// The restores of etcd runs of `cluster` found, by run, oldest first.
    fn restores(
        &self,
        cluster: ClusterId,
    ) -> Result<Vec<(super::RunId, super::restore::Restore)>, StoreError>;

    /// The encryption policy the newest run with an encryption config
    /// recorded, and that run's head revision.
    fn encryption_policy(&self, cluster: ClusterId) -> Result<Option<(Policy, Revision)>, StoreError>;
}

/// A cluster's stored history key by key, the gaps in it, and the cluster a run read.
pub trait ChangeReads {
    /// The revision ranges of `cluster` lost to compaction between runs.
    fn gaps(&self, cluster: ClusterId) -> Result<Vec<Gap>, StoreError>;

    /// Calls `visit` with every key's revisions of `cluster`, key by key,
    /// oldest first, with their classes, field hashes and object facts.
    fn key_histories(
        &self,
        cluster: ClusterId,
        visit: &mut dyn FnMut(&[ObjectRevision]),
    ) -> Result<(), StoreError>;

    /// The cluster a run read.
    fn run_cluster(&self, run: RunId) -> Result<Option<ClusterId>, StoreError>;
}

/// Revisions two keys hold.
pub trait SharedRevisionReads {
    /// The revisions of `cluster` that two or more keys hold, one of them
    /// not as a tombstone: the oldest `limit` with their rows, and how many
    /// there are in all.
    fn shared_revisions(
        &self,
        cluster: ClusterId,
        limit: usize,
    ) -> Result<super::shared_revision::SharedRevisions, StoreError>;
}

/// Creates no audited request explains.
pub trait UnauditedReads {
    /// Calls `visit` with each create of `cluster` no audited request
    /// explains, in spans the audit logs read cover (see
    /// [`super::unaudited`]), oldest first.
    fn unaudited_creates(
        &self,
        cluster: ClusterId,
        visit: &mut dyn FnMut(super::unaudited::UnauditedCreate),
    ) -> Result<(), StoreError>;
}

/// One key's revisions and the contents stored under a semantic hash.
pub trait HistoryReads {
    /// Every stored revision of one key, oldest first, of `cluster` or, when
    /// `None`, of every cluster (one after the other).
    fn history(&self, key: &[u8], cluster: Option<ClusterId>) -> Result<Vec<HistoryRow>, StoreError>;

    /// Fills each row's `diff`: its changed paths with the previous
    /// revision's and its own values (sensitive ones redacted).
    fn add_diffs(&self, rows: &mut [HistoryRow]) -> Result<(), StoreError>;

    /// The canonical content stored under a semantic hash; `None` when it
    /// holds sensitive values (never stored) or is unknown.
    fn canonical_value(&self, semantic_sha256: &[u8]) -> Result<Option<Value>, StoreError>;

    /// The redacted form stored under a semantic hash (see
    /// [`crate::canon::redact`]); `None` when its content holds no
    /// sensitive values, only sensitive ones, was stored before redacted
    /// forms were, or is unknown.
    fn redacted_form(&self, semantic_sha256: &[u8]) -> Result<Option<Value>, StoreError>;
}

/// The contents of a resource's revisions.
pub trait ContentReads {
    /// Every key of `group`/`resource` in `cluster` with its revisions'
    /// contents, oldest first.
    fn contents_of(
        &self,
        cluster: ClusterId,
        group: &str,
        resource: &str,
    ) -> Result<Vec<Contents>, StoreError>;
}

/// The objects live at a revision.
pub trait LiveReads {
    /// The cluster and head revision of a run.
    fn run_head(&self, run: RunId) -> Result<Option<(ClusterId, Revision)>, StoreError>;

    /// The objects live in `cluster` at `revision`, in key order, as they
    /// are read.
    fn live_objects(&self, cluster: ClusterId, revision: Revision) -> LiveIter<'_>;
}

/// Counts of writes, and the revision a time names.
pub trait StatsReads {
    /// The head revision of the last complete run (of `cluster`, when
    /// given) started by `time`.
    fn revision_at_time(
        &self,
        cluster: Option<ClusterId>,
        time: jiff::Timestamp,
    ) -> Result<Option<Revision>, StoreError>;

    /// Writes per change class.
    fn writes_by_class(&self, scope: &Scope) -> Result<Vec<(String, i64)>, StoreError>;

    /// Writes per resource.
    fn writes_by_resource(&self, scope: &Scope) -> Result<Vec<(String, i64)>, StoreError>;

    /// The keys written most, at most `limit` (`None`: all).
    fn busiest_keys(&self, scope: &Scope, limit: Option<u32>) -> Result<Vec<(String, i64)>, StoreError>;
}

/// Where the clock places a time.
pub trait ClockReads {
    /// Where the clock of `cluster` (when `None`, of the database's only
    /// cluster) places `time`: with `after`, the first revision that may
    /// have been written at or after it; else the last that may have been
    /// written by then.
    fn revision_by_clock(
        &self,
        cluster: Option<ClusterId>,
        time: jiff::Timestamp,
        after: bool,
    ) -> Result<super::clock::ByClock, StoreError>;
}

/// Stored findings, and how many.
pub trait FindingReads {
    /// The stored findings `query` selects, most severe first, as they are
    /// read.
    fn findings(&self, query: &FindingQuery) -> FindingIter<'_>;

    /// How many stored findings `scope` keeps (one with a revision in its
    /// range, or none at all, naming a key its objects keep), at or above
    /// `severity`, per cluster (row id) and detector; counted by the
    /// backend, never read one by one.
    fn finding_counts(
        &self,
        scope: &Scope,
        severity: Option<Severity>,
    ) -> Result<Vec<FindingCount>, StoreError>;
}

/// What the database holds, per cluster and resource.
pub trait UsageReads {
    /// Objects, revisions, bytes, encodings and writes per cluster and
    /// resource, the largest and busiest keys and the writes per field
    /// manager.
    fn usage(&self, scope: &Scope, top: u32) -> Result<Usage, StoreError>;

    /// What `usage` shows per cluster and resource.
    fn resource_usage(&self, scope: &Scope) -> Result<Vec<ResourceUsage>, StoreError>;
}

/// Audited write requests, object by object.
pub trait AuditReads {
    /// Calls `visit` with each object's audited write requests of
    /// `cluster`, object by object, in the order they were answered.
    fn audited_requests(
        &self,
        cluster: ClusterId,
        visit: &mut dyn FnMut(&AuditedObject, &[AuditedRequest]),
    ) -> Result<(), StoreError>;
}

/// Keys by name, the field hashes of a content, and whether a uid is live.
pub trait NameReads {
    /// Keys stored for `group`/`resource` (the key's storage group), in
    /// `namespace` (`None`: any; cluster-scoped keys have none) and named
    /// `name` (`None`: any), at most `limit` (`None`: all), in key order.
    fn keys_named(
        &self,
        group: &str,
        resource: &str,
        namespace: Option<&str>,
        name: Option<&str>,
        limit: Option<u32>,
    ) -> Result<Vec<NamedKey>, StoreError>;

    /// The field hashes stored with a semantic hash (the only trace of
    /// content holding sensitive values); empty when unknown.
    fn semantic_fields(
        &self,
        semantic_sha256: &[u8],
    ) -> Result<BTreeMap<FieldPath, [u8; FIELD_HASH_LEN]>, StoreError>;

    /// Whether an object with `uid` is live in the newest stored state of
    /// its key.
    fn uid_live(&self, uid: &str) -> Result<bool, StoreError>;
}

union! {
    /// What `analyze` and its detectors read: a cluster's history key by key,
    /// the runs, gaps, restores and audited requests that frame it, and the
    /// contents its revisions point at.
    AnalysisReads: Located, ClusterReads, RunReads, ChangeReads, SharedRevisionReads,
        UnauditedReads, HistoryReads, ContentReads, UsageReads, AuditReads
}

union! {
    /// What the reading commands read: everything `analyze` reads, and the
    /// live objects, counts, clock, findings and names they show.
    HistoryReader: AnalysisReads, LiveReads, StatsReads, ClockReads, FindingReads, NameReads
}
