//! The read side `analyze` and its detectors use, as an interface: a
//! cluster's stored history key by key (one key's revisions at a time, oldest
//! first, so nothing needs the whole history in memory), the values its
//! revisions point at, and what frames it (gaps, run times, the encryption
//! policy a run recorded). [`Store`] is its SQLite implementation; another
//! backend implements the same trait.

use super::values::Contents;
use super::{Gap, RunTime, Store, StoreError};
use crate::decrypt::policy::Policy;
use crate::store::object::ObjectRevision;
use serde_json::Value;
use std::path::Path;

/// A cluster's stored history, read key by key.
pub trait HistoryReader {
    /// Where the history is kept, for errors that name it.
    fn location(&self) -> &Path;

    /// The revision ranges of `cluster` lost to compaction between runs.
    fn gaps(&self, cluster: i64) -> Result<Vec<Gap>, StoreError>;

    /// When each run of `cluster` started and finished, and its head.
    fn run_times(&self, cluster: i64) -> Result<Vec<RunTime>, StoreError>;

    /// The encryption policy the newest run with an encryption config
    /// recorded, and that run's head revision.
    fn encryption_policy(&self, cluster: i64) -> Result<Option<(Policy, i64)>, StoreError>;

    /// Calls `visit` with every key's revisions of `cluster`, key by key,
    /// oldest first, with their classes, field hashes and object facts.
    fn key_histories(&self, cluster: i64, visit: &mut dyn FnMut(&[ObjectRevision]))
        -> Result<(), StoreError>;

    /// The canonical content stored under a semantic hash; `None` when it
    /// holds sensitive values (never stored) or is unknown.
    fn canonical_value(&self, semantic_sha256: &[u8]) -> Result<Option<Value>, StoreError>;

    /// Every key of `group`/`resource` in `cluster` with its revisions'
    /// contents, oldest first.
    fn contents_of(&self, cluster: i64, group: &str, resource: &str) -> Result<Vec<Contents>, StoreError>;
}

impl HistoryReader for Store {
    fn location(&self) -> &Path {
        Store::path(self)
    }

    fn gaps(&self, cluster: i64) -> Result<Vec<Gap>, StoreError> {
        Store::read_gaps(self, cluster)
    }

    fn run_times(&self, cluster: i64) -> Result<Vec<RunTime>, StoreError> {
        Store::read_run_times(self, cluster)
    }

    fn encryption_policy(&self, cluster: i64) -> Result<Option<(Policy, i64)>, StoreError> {
        Store::read_encryption_policy(self, cluster)
    }

    fn key_histories(
        &self,
        cluster: i64,
        visit: &mut dyn FnMut(&[ObjectRevision]),
    ) -> Result<(), StoreError> {
        Store::read_key_histories(self, cluster, visit)
    }

    fn canonical_value(&self, semantic_sha256: &[u8]) -> Result<Option<Value>, StoreError> {
        Store::read_canonical_value(self, semantic_sha256)
    }

    fn contents_of(&self, cluster: i64, group: &str, resource: &str) -> Result<Vec<Contents>, StoreError> {
        Store::read_contents_of(self, cluster, group, resource)
    }
}
