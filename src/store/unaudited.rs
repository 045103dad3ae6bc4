//! Creates no audited request explains, where an audit log covered them:
//! the audit evidence of `foreign-writes`.
//!
//! **Covered.** A log covers the revisions strictly between the first and
//! the last revision that `attribute` joined to its requests (its apiserver
//! was writing, and logging, on both sides), where nothing shows a writer
//! the logs read lack:
//!
//! - every update in the span (a live revision past version 1) of a key
//!   the logs hold updates or patches of has its request: another
//!   apiserver, whose log is missing, answers some of every client's
//!   requests, and its writes to such keys are left without one;
//! - at most one master lease (`<prefix>masterleases/<ip>`, which the
//!   default endpoint reconciler of each apiserver renews every 10 s) and
//!   at most one peer server lease were written in the span;
//! - where runs record Leases (`--exclude-resource none`), each apiserver
//!   identity Lease (`kube-system/apiserver-…`, renewed every 10 s by each
//!   apiserver since Kubernetes 1.26) written in the span has a request in
//!   the logs.
//!
//! And only for a resource whose creates the log records: it holds a create
//! of it.
//!
//! **Unexplained.** A create (version 1) of an API object (not a master or
//! peer server lease, which the apiserver writes straight to storage and
//! stores as cluster-wide `endpoints`) with no request joined to it, no
//! request of any verb addressing its key or its object by name, and no
//! create without a name (`generateName`) in its resource and namespace
//! that no revision was joined to. Deletes and updates are never judged:
//! lease expiry deletes without a request, a `deletecollection` names no
//! object, and a delete can write two revisions.

use super::reader::UnauditedReads;
use super::sql::{Cursor, Sql};
use super::tables::Cell;
use super::StoreError;
use crate::source::Revision;
use crate::store::ClusterId;

/// A create the audit logs do not explain, in a span a log covered.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UnauditedCreate {
    pub key: String,
    pub revision: Revision,
    /// The log that covered it, and the revisions its joined requests
    /// wrote first and last.
    pub log: String,
    pub from: Revision,
    pub to: Revision,
}

/// The query (`$1` is the cluster's row).
/// Master leases are stored as cluster-wide `endpoints`, as peer server
/// leases are (one per apiserver too, where that feature is on): a master
/// lease is named by its apiserver's IP address, a peer lease by its id.
const UNAUDITED_CREATES: &str = "\
WITH spans AS ( \
    SELECT a.log, min(w.mod_revision) AS lo, max(w.mod_revision) AS hi \
    FROM revision_writers w JOIN audit_requests a ON a.id = w.request_id \
    WHERE a.cluster_id = $1 AND a.log IS NOT NULL GROUP BY a.log), \
identities AS ( \
    SELECT r.key_id, r.mod_revision, \
      EXISTS (SELECT 1 FROM audit_requests a WHERE a.key_id = r.key_id) AS audited \
    FROM keys k JOIN revisions r ON r.key_id = k.id \
    WHERE k.cluster_id = $1 AND k.api_group = 'coordination.k8s.io' AND k.resource = 'leases' \
      AND k.namespace = 'kube-system' AND k.name LIKE 'apiserver-%'), \
apiserver_leases AS ( \
    SELECT r.key_id, r.mod_revision, (k.name LIKE '%.%' OR k.name LIKE '%:%') AS master FROM keys k \
    JOIN revisions r ON r.key_id = k.id \
    WHERE k.cluster_id = $1 AND k.api_group = '' AND k.resource = 'endpoints' AND k.namespace IS NULL), \
covering AS ( \
    SELECT s.log, s.lo, s.hi FROM spans s \
    WHERE NOT EXISTS (SELECT 1 FROM identities i \
        WHERE i.mod_revision > s.lo AND i.mod_revision < s.hi AND NOT i.audited) \
      AND (SELECT count(DISTINCT m.key_id) FROM apiserver_leases m \
        WHERE m.master AND m.mod_revision > s.lo AND m.mod_revision < s.hi) <= 1 \
      AND (SELECT count(DISTINCT m.key_id) FROM apiserver_leases m \
        WHERE NOT m.master AND m.mod_revision > s.lo AND m.mod_revision < s.hi) <= 1 \
      AND NOT EXISTS (SELECT 1 FROM revisions u \
        WHERE u.cluster_id = $1 AND u.mod_revision > s.lo AND u.mod_revision < s.hi \
          AND u.version > 1 AND u.deleted = false AND u.deleted_after IS NULL \
          AND NOT EXISTS (SELECT 1 FROM revision_writers w WHERE w.key_id = u.key_id AND w.mod_revision = u.mod_revision) \
          AND EXISTS (SELECT 1 FROM audit_requests a WHERE a.key_id = u.key_id AND a.verb IN ('update', 'patch')))) \
SELECT k.key, r.mod_revision, c.log, c.lo, c.hi \
FROM covering c \
JOIN revisions r ON r.cluster_id = $1 AND r.mod_revision > c.lo AND r.mod_revision < c.hi \
JOIN keys k ON k.id = r.key_id \
WHERE r.version = 1 AND r.deleted = false AND r.deleted_after IS NULL \
  AND NOT (k.api_group = '' AND k.resource = 'endpoints' AND k.namespace IS NULL) \
  AND NOT EXISTS (SELECT 1 FROM audit_requests a WHERE a.key_id = r.key_id) \
  AND NOT EXISTS (SELECT 1 FROM revision_writers w WHERE w.key_id = r.key_id AND w.mod_revision = r.mod_revision) \
  AND NOT EXISTS (SELECT 1 FROM audit_requests a WHERE a.cluster_id = $1 AND a.api_group = k.api_group \
      AND a.resource = k.resource AND a.namespace IS NOT DISTINCT FROM k.namespace AND a.name = k.name) \
  AND NOT EXISTS (SELECT 1 FROM audit_requests a WHERE a.cluster_id = $1 AND a.api_group = k.api_group \
      AND a.resource = k.resource AND a.namespace IS NOT DISTINCT FROM k.namespace AND a.name IS NULL \
      AND a.key_id IS NULL AND a.verb = 'create') \
  AND EXISTS (SELECT 1 FROM audit_requests a WHERE a.cluster_id = $1 AND a.log = c.log \
      AND a.api_group = k.api_group AND a.resource = k.resource AND a.verb = 'create' AND a.subresource IS NULL) \
ORDER BY r.mod_revision, k.key, c.log";

/// Passes on the rows of [`UNAUDITED_CREATES`] (ordered by revision and
/// key), each create once, under the first log that covered it.
pub(crate) struct Once<'v> {
    visit: &'v mut dyn FnMut(UnauditedCreate),
    last: Option<(Revision, String)>,
}

impl<'v> Once<'v> {
    pub(crate) fn new(visit: &'v mut dyn FnMut(UnauditedCreate)) -> Self {
        Once { visit, last: None }
    }

    pub(crate) fn push(&mut self, row: UnauditedCreate) {
        if self
            .last
            .as_ref()
            .is_some_and(|(revision, key)| *revision == row.revision && *key == row.key)
        {
            return;
        }
        self.last = Some((row.revision, row.key.clone()));
        (self.visit)(row);
    }
}

impl<T: Sql + ?Sized> UnauditedReads for T {
    fn unaudited_creates(
        &self,
        cluster: ClusterId,
        visit: &mut dyn FnMut(UnauditedCreate),
    ) -> Result<(), StoreError> {
        let mut once = Once::new(visit);
        self.each(
            "revisions",
            UNAUDITED_CREATES,
            &[Cell::from(cluster)],
            &mut |row| {
                let mut c = Cursor::new(self, "revisions", row);
                once.push(UnauditedCreate {
                    key: c.lossy("key")?,
                    revision: c.revision("mod_revision")?,
                    log: c.text("log")?,
                    from: c.revision("mod_revision")?,
                    to: c.revision("mod_revision")?,
                });
                Ok(())
            },
        )
    }
}
