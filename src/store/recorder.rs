//! The write side, as interfaces, one topic trait per file that holds its
//! SQL (written once over [`super::sql::Sql`] where the dialects agree):
//! what a run records about itself and the revisions it
//! reads (`HashKeyLoad`, `RunWrites`, `ClusterWrites`, `FieldConfigs`,
//! `RowWrites`, `VanishedWrites`), what `analyze` writes back (`ClassWrites`,
//! `FindingWrites`) and what `prune` removes (`PruneWrites`).
//! [`RunRecorder`] is their union.
use super::cluster::ClusterName;
use super::hash_key::{HashKeyOptions, KeyNotice};
use super::vanished::{InferredDelete, RunHead, StoredKey};
use super::{
    ClassifyStats, FindingsWriter, Gap, Previous, Pruned, RevisionRows, RunId, RunKind, RunStatus, ServedBy,
    Shortfall, StoreError,
};
use crate::canon::keyed_hash::HashKey;
use crate::canon::path::FieldPath;
use crate::canon::semantic::FieldConfig;
use crate::decrypt::policy::Policy;
use crate::source::db_file::Damage;
use crate::source::wal::Recovered;
use crate::source::{LiveKey, Revision};
use crate::store::ClusterId;

/// Something a run learns about itself as it goes, recorded with it.
#[derive(Clone, Copy, Debug)]
pub enum RunFact<'a> {
    /// Which schema names the run's fields.
    Schema(&'a str),
    /// The etcd server version a live run talks to.
    EtcdVersion(&'a str),
    /// How a live run fetched history (`watch` or `snapshot`).
    Fetched(&'a str),
    /// What a salvaging run of a damaged file worked around.
    Salvage(&'a Damage),
    /// What a run took from a member's WAL.
    Wal(&'a Recovered),
    /// The write policy of the encryption config the run decrypts with.
    EncryptionPolicy(&'a Policy),
    /// What the run pinned once connected: the cluster, the head it reads
    /// to, etcd's compaction point and where its history starts (kept if
    /// set before).
    Target {
        cluster: ClusterId,
        head: Revision,
        compact: Revision,
        history_from: Revision,
    },
    /// The data file a file run reads.
    File {
        size: u64,
        sha256: &'a str,
        first: Option<Revision>,
        last: Option<Revision>,
    },
    /// From which revision the run's stored history is unbroken.
    Coverage(Revision),
    /// Everything up to this revision is stored (the run's head moves
    /// there too): how far a `follow` run got.
    CompleteThrough(Revision),
    /// Revisions of `cluster` the run found lost to compaction.
    Gap { cluster: ClusterId, gap: Gap },
    /// etcd was restored or rewound since the run the run would continue.
    Restored(&'a super::restore::Restore),
    /// An etcd member started serving the run (a reconnection to the one
    /// serving, without a reason, records nothing).
    Served(&'a ServedBy),
}

/// The key keyed hashes are taken with.
pub trait HashKeyLoad {
    /// Loads the key keyed hashes are taken with (saying so when it moved
    /// out of an older database or is new); a run needs it.
    fn load_hash_key(&self, options: &HashKeyOptions) -> Result<Option<KeyNotice>, StoreError>;

    /// The key loaded; an error before [`HashKeyLoad::load_hash_key`].
    fn hash_key(&self) -> Result<&HashKey, StoreError>;
}

/// A run's own record, and the checks of its history against the source.
pub trait RunWrites {
    /// Starts a run of `kind` reading `source`, with the id of the hash key
    /// it hashes with.
    fn begin_run(&self, kind: RunKind, source: &str, prefix: &str, filter: &str)
        -> Result<RunId, StoreError>;

    /// Records what the run learnt.
    fn record(&self, run: RunId, fact: RunFact<'_>) -> Result<(), StoreError>;

    /// Ends a run with its status, key count and error; returns the
    /// revisions it added, counted from what it committed.
    fn finish_run(
        &self,
        run: RunId,
        status: RunStatus,
        keys_seen: i64,
        error: Option<&str>,
    ) -> Result<i64, StoreError>;

    /// The highest revision up to which a run of the cluster reading the
    /// same prefix with the same filter stored everything, and from where
    /// that run's history is unbroken (runs from before filters existed
    /// recorded `everything`).
    fn previous_head(
        &self,
        cluster: ClusterId,
        prefix: &str,
        filter: &str,
        everything: &str,
    ) -> Result<Option<Previous>, StoreError>;

    /// Keys under `prefix` whose newest stored revision at or before `head`
    /// is not a tombstone.
    fn live_keys(&self, cluster: ClusterId, prefix: &[u8], head: Revision) -> Result<i64, StoreError>;
}

/// A run's stored history checked against its source, a page of keys
/// at a time (each backend's bulk lookup).
pub trait HistoryChecks {
    /// The stored history checked against the source's own counters: for
    /// every key of `live` that `recorded` keeps and whose generation began
    /// at or after `covered_from`, the stored revisions of that generation
    /// must number its `version`, the newest being its `mod_revision`.
    fn history_shortfall(
        &self,
        cluster: ClusterId,
        covered_from: Revision,
        live: &[LiveKey],
        recorded: &dyn Fn(&[u8]) -> bool,
    ) -> Result<Option<Shortfall>, StoreError>;
}

/// The cluster a run reads.
pub trait ClusterWrites {
    /// The row id of the cluster with etcd's `etcd_cluster_id`, created on
    /// first sight, named `name` when given, and the name that replaced
    /// (a rename). A name another cluster has is refused
    /// ([`StoreError::Conflict`]); without `name`, the cluster keeps its own.
    fn cluster(
        &self,
        etcd_cluster_id: &str,
        name: Option<&ClusterName>,
    ) -> Result<(ClusterId, Option<ClusterName>), StoreError>;
}

/// How hashes are taken.
pub trait FieldConfigs {
    /// How hashes are taken: fixed by the first run (`depth` and
    /// `sensitive`, or the defaults); later runs may repeat it, not change it.
    fn field_config(&self, depth: Option<usize>, sensitive: &[FieldPath]) -> Result<FieldConfig, StoreError>;
}

/// Where a run's revisions go.
pub trait RowWrites {
    /// Where a run's revisions go: the rows the run's writer inserts, and
    /// the key keyed hashes are taken with.
    fn revision_rows(&self) -> Result<(Box<dyn RevisionRows + '_>, &HashKey), StoreError>;
}

/// Keys that vanished between runs, and their inferred deletes.
pub trait VanishedWrites {
    /// Up to `limit` stored keys of `cluster` under `prefix` after `after`
    /// (from the first when `None`), in key order, as revision `head` sees
    /// them; keys with no revision at or before `head` are left out.
    fn stored_keys(
        &self,
        cluster: ClusterId,
        prefix: &[u8],
        head: Revision,
        after: Option<&[u8]>,
        limit: usize,
    ) -> Result<Vec<StoredKey>, StoreError>;

    /// The heads of `cluster`'s complete runs other than `run`, and the
    /// prefixes they read, oldest head first.
    fn run_heads(&self, cluster: ClusterId, run: RunId) -> Result<Vec<RunHead>, StoreError>;

    /// Stores `run`'s tombstones of `deletes`, in one transaction.
    fn store_inferred_deletes(
        &self,
        cluster: ClusterId,
        run: RunId,
        deletes: &[InferredDelete],
    ) -> Result<(), StoreError>;
}

/// Change classes.
pub trait ClassWrites {
    /// Gives every revision of `cluster` (or of every cluster) without a
    /// change class its class, cause and changed paths.
    fn classify_pending(&self, cluster: Option<ClusterId>) -> Result<ClassifyStats, StoreError>;
}

/// Replacing findings.
pub trait FindingWrites {
    /// A writer replacing `detectors`' findings of `cluster`.
    fn findings_writer(
        &self,
        cluster: ClusterId,
        detectors: &[&str],
    ) -> Result<Box<dyn FindingsWriter + '_>, StoreError>;
}

/// Removing old runs.
pub trait PruneWrites {
    /// Removes runs finished before `before` or beyond the newest `keep`,
    /// and what only they needed.
    fn prune(&self, before: Option<jiff::Timestamp>, keep: Option<u32>) -> Result<Pruned, StoreError>;

    /// Gives the space pruning freed back to the file system.
    fn vacuum(&self) -> Result<(), StoreError>;
}

union! {
    /// What runs, `analyze` and `prune` write: every write topic.
    RunRecorder: HashKeyLoad, RunWrites, HistoryChecks, ClusterWrites, FieldConfigs, RowWrites, VanishedWrites,
        ClassWrites, FindingWrites, PruneWrites
}
