//! [`HistoryReader`] over the SQLite database.

use super::Store;
use crate::canon::path::FieldPath;
use crate::canon::semantic::FIELD_HASH_LEN;
use crate::decrypt::policy::Policy;
use crate::store::audit::{AuditedObject, AuditedRequest};
use crate::store::clock::ByClock;
use crate::store::cluster::Cluster;
use crate::store::finding::{FindingCount, Severity};
use crate::store::object::ObjectRevision;
use crate::store::restore::Restore;
use crate::store::shared_revision::SharedRevisions;
use crate::store::unaudited::UnauditedCreate;
use crate::store::{
    Contents, FindingIter, FindingQuery, Gap, HistoryReader, HistoryRow, LiveIter, NamedKey, ResourceUsage,
    RunId, RunInfo, RunTime, Scope, StoreError, Usage,
};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::Path;

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

    fn restores(&self, cluster: i64) -> Result<Vec<(RunId, Restore)>, StoreError> {
        Store::read_restores(self, cluster)
    }

    fn shared_revisions(&self, cluster: i64, limit: usize) -> Result<SharedRevisions, StoreError> {
        Store::read_shared_revisions(self, cluster, limit)
    }

    fn unaudited_creates(
        &self,
        cluster: i64,
        visit: &mut dyn FnMut(UnauditedCreate),
    ) -> Result<(), StoreError> {
        Store::read_unaudited_creates(self, cluster, visit)
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

    fn redacted_form(&self, semantic_sha256: &[u8]) -> Result<Option<Value>, StoreError> {
        Store::read_redacted_form(self, semantic_sha256)
    }

    fn contents_of(&self, cluster: i64, group: &str, resource: &str) -> Result<Vec<Contents>, StoreError> {
        Store::read_contents_of(self, cluster, group, resource)
    }
    fn clusters(&self) -> Result<Vec<Cluster>, StoreError> {
        Store::read_clusters(self)
    }

    fn runs(&self) -> Result<Vec<RunInfo>, StoreError> {
        Store::read_runs(self)
    }

    fn run_cluster(&self, run: i64) -> Result<Option<i64>, StoreError> {
        Store::read_run_cluster(self, run)
    }

    fn run_head(&self, run: i64) -> Result<Option<(i64, i64)>, StoreError> {
        Store::read_run_head(self, run)
    }

    fn revision_at_time(&self, cluster: Option<i64>, time: &str) -> Result<Option<i64>, StoreError> {
        Store::read_revision_at_time(self, cluster, time)
    }

    fn revision_by_clock(
        &self,
        cluster: Option<i64>,
        time: jiff::Timestamp,
        after: bool,
    ) -> Result<ByClock, StoreError> {
        Store::read_revision_by_clock(self, cluster, time, after)
    }

    fn history(&self, key: &[u8], cluster: Option<i64>) -> Result<Vec<HistoryRow>, StoreError> {
        Store::read_history(self, key, cluster)
    }

    fn keys_named(
        &self,
        group: &str,
        resource: &str,
        namespace: Option<&str>,
        name: Option<&str>,
        limit: Option<u32>,
    ) -> Result<Vec<NamedKey>, StoreError> {
        Store::read_keys_named(self, group, resource, namespace, name, limit)
    }

    fn semantic_fields(
        &self,
        semantic_sha256: &[u8],
    ) -> Result<BTreeMap<FieldPath, [u8; FIELD_HASH_LEN]>, StoreError> {
        Store::read_semantic_fields(self, semantic_sha256)
    }

    fn uid_live(&self, uid: &str) -> Result<bool, StoreError> {
        Store::read_uid_live(self, uid)
    }

    fn add_diffs(&self, rows: &mut [HistoryRow]) -> Result<(), StoreError> {
        Store::read_add_diffs(self, rows)
    }

    fn live_objects(&self, cluster: i64, revision: i64) -> LiveIter<'_> {
        Store::read_live_objects(self, cluster, revision)
    }

    fn findings(&self, query: &FindingQuery) -> FindingIter<'_> {
        Store::read_findings(self, query)
    }

    fn usage(&self, scope: &Scope, top: u32) -> Result<Usage, StoreError> {
        Store::read_usage(self, scope, top)
    }

    fn resource_usage(&self, scope: &Scope) -> Result<Vec<ResourceUsage>, StoreError> {
        Store::read_resource_usage(self, scope)
    }

    fn finding_counts(
        &self,
        scope: &Scope,
        severity: Option<Severity>,
    ) -> Result<Vec<FindingCount>, StoreError> {
        Store::read_finding_counts(self, scope, severity)
    }

    fn writes_by_class(&self, scope: &Scope) -> Result<Vec<(String, i64)>, StoreError> {
        Store::read_writes_by_class(self, scope)
    }

    fn writes_by_resource(&self, scope: &Scope) -> Result<Vec<(String, i64)>, StoreError> {
        Store::read_writes_by_resource(self, scope)
    }

    fn audited_requests(
        &self,
        cluster: i64,
        visit: &mut dyn FnMut(&AuditedObject, &[AuditedRequest]),
    ) -> Result<(), StoreError> {
        Store::read_audited_requests(self, cluster, visit)
    }

    fn busiest_keys(&self, scope: &Scope, limit: Option<u32>) -> Result<Vec<(String, i64)>, StoreError> {
        Store::read_busiest_keys(self, scope, limit)
    }
}
