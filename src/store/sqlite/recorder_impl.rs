//! [`RunRecorder`] over the SQLite database.

use super::revision_rows::SqliteRows;
use super::Store;
use crate::canon::keyed_hash::HashKey;
use crate::canon::path::FieldPath;
use crate::canon::semantic::FieldConfig;
use crate::source::LiveKey;
use crate::store::cluster::ClusterName;
use crate::store::hash_key::{HashKeyOptions, KeyNotice};
use crate::store::recorder::{RunFact, RunRecorder};
use crate::store::vanished::{InferredDelete, RunHead, StoredKey};
use crate::store::{
    ClassifyStats, FindingsWriter, Previous, Pruned, RevisionRows, RunId, RunStatus, Shortfall, StoreError,
};

impl RunRecorder for Store {
    fn load_hash_key(&self, options: &HashKeyOptions) -> Result<Option<KeyNotice>, StoreError> {
        Store::load_hash_key(self, options)
    }

    fn begin_run(&self, source: &str, prefix: &str, filter: &str) -> Result<RunId, StoreError> {
        Store::begin_run(self, source, prefix, filter)
    }

    fn record(&self, run: RunId, fact: RunFact<'_>) -> Result<(), StoreError> {
        Store::record_fact(self, run, fact)
    }

    fn finish_run(
        &self,
        run: RunId,
        status: RunStatus,
        keys_seen: i64,
        error: Option<&str>,
    ) -> Result<i64, StoreError> {
        Store::finish_run(self, run, status, keys_seen, error)
    }

    fn cluster(
        &self,
        etcd_cluster_id: &str,
        name: Option<&ClusterName>,
    ) -> Result<(i64, Option<ClusterName>), StoreError> {
        Store::cluster(self, etcd_cluster_id, name)
    }

    fn previous_head(
        &self,
        cluster: i64,
        prefix: &str,
        filter: &str,
        everything: &str,
    ) -> Result<Option<Previous>, StoreError> {
        Store::previous_head(self, cluster, prefix, filter, everything)
    }

    fn field_config(&self, depth: Option<usize>, sensitive: &[FieldPath]) -> Result<FieldConfig, StoreError> {
        Store::field_config(self, depth, sensitive)
    }

    fn revision_rows(&self) -> Result<(Box<dyn RevisionRows + '_>, &HashKey), StoreError> {
        Ok((Box::new(SqliteRows { store: self }), self.hash_key()?))
    }

    fn history_shortfall(
        &self,
        cluster: i64,
        covered_from: i64,
        live: &[LiveKey],
        recorded: &dyn Fn(&[u8]) -> bool,
    ) -> Result<Option<Shortfall>, StoreError> {
        Store::history_shortfall(self, cluster, covered_from, live, recorded)
    }

    fn live_keys(&self, cluster: i64, prefix: &[u8], head: i64) -> Result<i64, StoreError> {
        Store::live_keys(self, cluster, prefix, head)
    }

    fn stored_keys(
        &self,
        cluster: i64,
        prefix: &[u8],
        head: i64,
        after: Option<&[u8]>,
        limit: usize,
    ) -> Result<Vec<StoredKey>, StoreError> {
        Store::stored_keys(self, cluster, prefix, head, after, limit)
    }

    fn run_heads(&self, cluster: i64, run: RunId) -> Result<Vec<RunHead>, StoreError> {
        Store::run_heads(self, cluster, run)
    }

    fn store_inferred_deletes(
        &self,
        cluster: i64,
        run: RunId,
        deletes: &[InferredDelete],
    ) -> Result<(), StoreError> {
        Store::store_inferred_deletes(self, cluster, run, deletes)
    }

    fn classify_pending(&self, cluster: Option<i64>) -> Result<ClassifyStats, StoreError> {
        Store::classify_pending(self, cluster)
    }

    fn findings_writer(
        &self,
        cluster: i64,
        detectors: &[&str],
    ) -> Result<Box<dyn FindingsWriter + '_>, StoreError> {
        Store::findings_writer(self, cluster, detectors)
    }

    fn prune(&self, before: Option<&str>, keep: Option<u32>) -> Result<Pruned, StoreError> {
        Store::prune(self, before, keep)
    }

    fn vacuum(&self) -> Result<(), StoreError> {
        Store::vacuum(self)
    }
}
