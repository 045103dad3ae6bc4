//! Audit requests and who wrote each revision: staging what the logs say,
//! joining it to the stored revisions, reading the writers back.

use super::Store;
use crate::store::audit::{
    AuditRecorder, AuditRequest, AuditStage, AuditedObject, AuditedRequest, ByObject, JoinKey, JoinSummary,
    KeyAttribution, KeyRequest, KeyRevision, Outcome,
};
use crate::store::ClusterId;
use crate::store::StoreError;
use rusqlite::params;

/// Requests staged per transaction: a log of millions of events commits as
/// it goes instead of growing one write-ahead log.
const STAGE_BATCH: u64 = 20_000;

/// Groups built-in resources are served from while stored under one of
/// them (`events` under core for `events.k8s.io`, `deployments` under `apps`
/// for `extensions`): a request in one names a key stored under another.
const COHABITING_GROUPS: &str = "('', 'apps', 'extensions', 'events.k8s.io', 'networking.k8s.io', 'policy')";

/// The SQLite [`AuditStage`]: batches of requests, one transaction each.
pub(in crate::store) struct AuditStaging<'a> {
    store: &'a Store,
    cluster: ClusterId,
    in_batch: u64,
    staged: u64,
    open: bool,
}

impl AuditRecorder for Store {
    fn stage_audit(&self, cluster: ClusterId) -> Result<Box<dyn AuditStage + '_>, StoreError> {
        Ok(Box::new(self.begin_audit_stage(cluster)?))
    }

    fn join_audit(&self, cluster: ClusterId, join: &JoinKey<'_>) -> Result<JoinSummary, StoreError> {
        self.rejoin_audit(cluster, join)
    }
}

impl Store {
    pub(in crate::store) fn begin_audit_stage(
        &self,
        cluster: ClusterId,
    ) -> Result<AuditStaging<'_>, StoreError> {
        self.conn
            .execute_batch("BEGIN IMMEDIATE")
            .map_err(|e| self.err(e))?;
        Ok(AuditStaging {
            store: self,
            cluster,
            in_batch: 0,
            staged: 0,
            open: true,
        })
    }

    pub(in crate::store) fn rejoin_audit(
        &self,
        cluster: ClusterId,
        join: &JoinKey<'_>,
    ) -> Result<JoinSummary, StoreError> {
        self.in_transaction(|| {
            let err = |e| self.err(e);
            // The key of the request's group, else of a cohabiting one.
            for group_match in [
                "k.api_group = audit_requests.api_group".to_string(),
                format!("k.api_group IN {COHABITING_GROUPS} AND audit_requests.api_group IN {COHABITING_GROUPS}"),
            ] {
                self.conn
                    .execute(
                        &format!(
                            "UPDATE audit_requests SET key_id = (SELECT min(k.id) FROM keys k \
                               WHERE k.cluster_id = audit_requests.cluster_id AND k.resource = audit_requests.resource \
                               AND k.namespace IS audit_requests.namespace AND k.name = audit_requests.name \
                               AND {group_match}) \
                             WHERE cluster_id = ?1 AND key_id IS NULL AND name IS NOT NULL"
                        ),
                        [cluster],
                    )
                    .map_err(err)?;
            }
            // A create named by generateName: the key its response's
            // revision wrote.
            self.conn
                .execute(
                    "UPDATE audit_requests SET key_id = (SELECT r.key_id FROM revisions r JOIN keys k ON k.id = r.key_id \
                       WHERE r.mod_revision = audit_requests.response_revision AND k.cluster_id = audit_requests.cluster_id \
                       AND k.resource = audit_requests.resource AND k.namespace IS audit_requests.namespace) \
                     WHERE cluster_id = ?1 AND key_id IS NULL AND name IS NULL AND response_revision IS NOT NULL",
                    [cluster],
                )
                .map_err(err)?;
            self.conn
                .execute(
                    "DELETE FROM revision_writers WHERE request_id IN (SELECT id FROM audit_requests WHERE cluster_id = ?1)",
                    [cluster],
                )
                .map_err(err)?;
            self.conn
                .execute(
                    "UPDATE audit_requests SET outcome = 'unmatched' WHERE cluster_id = ?1",
                    [cluster],
                )
                .map_err(err)?;
            let keys: Vec<i64> = {
                let mut stmt = self
                    .conn
                    .prepare(
                        "SELECT DISTINCT key_id FROM audit_requests WHERE cluster_id = ?1 AND key_id IS NOT NULL ORDER BY key_id",
                    )
                    .map_err(err)?;
                let rows = stmt.query_map([cluster], |r| r.get(0)).map_err(err)?;
                rows.collect::<Result<_, _>>().map_err(err)?
            };
            let mut unattributed = 0;
            for key in keys {
                let revisions = self.key_revisions(cluster, key)?;
                let requests = self.key_requests(key)?;
                let found = join(&revisions, &requests);
                self.save_attribution(key, &found)?;
                unattributed += found.unattributed;
            }
            let mut summary = self.join_summary(cluster)?;
            summary.unattributed_revisions = unattributed;
            Ok(summary)
        })
    }

    fn key_revisions(&self, cluster: ClusterId, key: i64) -> Result<Vec<KeyRevision>, StoreError> {
        let err = |e| self.err(e);
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT mod_revision, version, deleted, creation_timestamp, \
                 deletion_timestamp IS NOT NULL AND coalesce(finalizers, '[]') = '[]' \
                 FROM revisions WHERE key_id = ?1 AND deleted_after IS NULL ORDER BY mod_revision",
            )
            .map_err(err)?;
        let rows = stmt
            .query_map([key], |r| {
                Ok(KeyRevision {
                    mod_revision: r.get(0)?,
                    version: r.get(1)?,
                    deleted: r.get(2)?,
                    creation_timestamp: r.get(3)?,
                    written: Default::default(),
                    deleting: r.get(4)?,
                })
            })
            .map_err(err)?;
        let mut revisions: Vec<KeyRevision> = rows.collect::<Result<_, _>>().map_err(err)?;
        for r in &mut revisions {
            r.written = crate::store::clock::read_interval(self, cluster, r.mod_revision)?;
        }
        Ok(revisions)
    }

    /// A key's staged requests in the order they were answered.
    fn key_requests(&self, key: i64) -> Result<Vec<KeyRequest>, StoreError> {
        let err = |e| self.err(e);
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT id, verb, subresource, code, response_revision, precondition_revision, time \
                 FROM audit_requests WHERE key_id = ?1",
            )
            .map_err(err)?;
        let rows = stmt
            .query_map([key], |r| {
                Ok((
                    KeyRequest {
                        id: r.get(0)?,
                        verb: r.get(1)?,
                        subresource: r.get(2)?,
                        code: r.get(3)?,
                        response_revision: r.get(4)?,
                        precondition_revision: r.get(5)?,
                        time: jiff::Timestamp::UNIX_EPOCH,
                    },
                    r.get::<_, String>(6)?,
                ))
            })
            .map_err(err)?;
        let mut requests = Vec::new();
        for row in rows {
            let (mut request, time) = row.map_err(err)?;
            request.time = time
                .parse()
                .map_err(|e| self.damaged("audit_requests.time", format!("{time:?}: {e}")))?;
            requests.push(request);
        }
        requests.sort_by_key(|r| (r.time, r.id));
        Ok(requests)
    }

    fn save_attribution(&self, key: i64, found: &KeyAttribution) -> Result<(), StoreError> {
        let err = |e| self.err(e);
        let mut outcome = self
            .conn
            .prepare_cached("UPDATE audit_requests SET outcome = ?2 WHERE id = ?1")
            .map_err(err)?;
        for (id, o) in &found.outcomes {
            outcome.execute(params![id, o.as_str()]).map_err(err)?;
        }
        let mut writer = self
            .conn
            .prepare_cached("INSERT INTO revision_writers (key_id, mod_revision, request_id, match) VALUES (?1, ?2, ?3, ?4)")
            .map_err(err)?;
        for (revision, id, m) in &found.writers {
            writer
                .execute(params![key, revision, id, m.as_str()])
                .map_err(err)?;
        }
        Ok(())
    }

    fn join_summary(&self, cluster: ClusterId) -> Result<JoinSummary, StoreError> {
        let err = |e| self.err(e);
        let mut summary = JoinSummary::default();
        let mut stmt = self
            .conn
            .prepare(
                "SELECT outcome, count(*), count(key_id) FROM audit_requests WHERE cluster_id = ?1 GROUP BY outcome",
            )
            .map_err(err)?;
        let mut rows = stmt.query([cluster]).map_err(err)?;
        while let Some(r) = rows.next().map_err(err)? {
            let name: String = r.get(0).map_err(err)?;
            let (n, keyed): (u64, u64) = (r.get(1).map_err(err)?, r.get(2).map_err(err)?);
            let outcome = Outcome::parse(&name).map_err(|e| self.damaged("audit_requests.outcome", e))?;
            summary.count(outcome, n, keyed);
        }
        let (exact, by_order) = self
            .conn
            .query_row(
                "SELECT count(*) FILTER (WHERE w.match = 'exact'), count(*) FILTER (WHERE w.match = 'by-order') \
                 FROM revision_writers w JOIN audit_requests a ON a.id = w.request_id WHERE a.cluster_id = ?1",
                [cluster],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .map_err(err)?;
        summary.exact = exact;
        summary.by_order = by_order;
        Ok(summary)
    }
}

impl AuditStage for AuditStaging<'_> {
    fn push(&mut self, r: &AuditRequest) -> Result<bool, StoreError> {
        let store = self.store;
        let err = |e| store.err(e);
        let json = |v: &[String]| serde_json::Value::from(v.to_vec()).to_string();
        let added = store
            .conn
            .prepare_cached(
                "INSERT OR IGNORE INTO audit_requests (cluster_id, audit_id, verb, api_group, resource, namespace, name, \
                 subresource, username, groups, impersonated_user, user_agent, source_ips, code, level, \
                 response_revision, precondition_revision, time, log) \
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19)",
            )
            .map_err(err)?
            .execute(params![
                self.cluster,
                r.audit_id,
                r.verb,
                r.api_group,
                r.resource,
                r.namespace,
                r.name,
                r.subresource,
                r.user,
                json(&r.groups),
                r.impersonated_user,
                r.user_agent,
                json(&r.source_ips),
                r.code,
                r.level,
                r.response_revision,
                r.precondition_revision,
                r.time,
                r.log,
            ])
            .map_err(err)?
            == 1;
        self.staged += u64::from(added);
        self.in_batch += 1;
        if self.in_batch >= STAGE_BATCH {
            store.conn.execute_batch("COMMIT; BEGIN IMMEDIATE").map_err(err)?;
            self.in_batch = 0;
        }
        Ok(added)
    }

    fn staged(&self) -> u64 {
        self.staged
    }

    fn finish(mut self: Box<Self>) -> Result<(), StoreError> {
        self.open = false;
        self.store
            .conn
            .execute_batch("COMMIT")
            .map_err(|e| self.store.err(e))
    }
}

impl Drop for AuditStaging<'_> {
    /// Staging that failed keeps the batches it committed (each a true
    /// record of the log, staged again harmlessly) and drops the rest.
    fn drop(&mut self) {
        if self.open {
            let _ = self.store.conn.execute_batch("ROLLBACK");
        }
    }
}

impl crate::store::reader::AuditReads for Store {
    fn audited_requests(
        &self,
        cluster: ClusterId,
        visit: &mut dyn FnMut(&AuditedObject, &[AuditedRequest]),
    ) -> Result<(), StoreError> {
        let err = |e| self.err(e);
        let mut stmt = self
            .conn
            .prepare(
                "SELECT a.api_group, a.resource, a.namespace, a.name, k.key, a.audit_id, a.username, a.user_agent, \
                 a.verb, a.subresource, a.code, a.outcome, a.time, \
                 (SELECT min(w.mod_revision) FROM revision_writers w WHERE w.request_id = a.id) \
                 FROM audit_requests a LEFT JOIN keys k ON k.id = a.key_id \
                 WHERE a.cluster_id = ?1 AND a.name IS NOT NULL \
                 ORDER BY a.api_group, a.resource, a.namespace, a.name",
            )
            .map_err(err)?;
        let mut rows = stmt.query([cluster]).map_err(err)?;
        let mut objects = ByObject::new(visit);
        while let Some(r) = rows.next().map_err(err)? {
            let object = AuditedObject {
                api_group: r.get(0).map_err(err)?,
                resource: r.get(1).map_err(err)?,
                namespace: r.get(2).map_err(err)?,
                name: r.get(3).map_err(err)?,
                key: r
                    .get::<_, Option<Vec<u8>>>(4)
                    .map_err(err)?
                    .map(|k| String::from_utf8_lossy(&k).into_owned()),
            };
            let outcome: String = r.get(11).map_err(err)?;
            let time_text: String = r.get(12).map_err(err)?;
            let request = AuditedRequest {
                audit_id: r.get(5).map_err(err)?,
                user: r.get(6).map_err(err)?,
                user_agent: r.get(7).map_err(err)?,
                verb: r.get(8).map_err(err)?,
                subresource: r.get(9).map_err(err)?,
                code: r.get(10).map_err(err)?,
                outcome: Outcome::parse(&outcome).map_err(|e| self.damaged("audit_requests.outcome", e))?,
                time: time_text
                    .parse()
                    .map_err(|e| self.damaged("audit_requests.time", format!("{time_text:?}: {e}")))?,
                time_text,
                revision: r.get(13).map_err(err)?,
            };
            objects.push(object, request);
        }
        objects.finish();
        Ok(())
    }
}
