//! Audit requests and who wrote each revision: staging what the logs say,
//! joining it to the stored revisions, reading the writers back.

use super::Store;
use crate::store::audit::{
    AuditRecorder, AuditRequest, AuditStage, AuditedObject, AuditedRequest, ByObject, JoinKey, JoinSummary,
    KeyAttribution, KeyRequest, KeyRevision, Outcome,
};
use crate::store::ClusterId;
use crate::store::StoreError;
use postgres::Row;
use std::cell::{Cell, RefCell};
use std::collections::HashSet;

/// Requests staged per statement (and so per transaction): one round trip
/// for many requests, and a log of millions of events commits as it goes.
const STAGE_BATCH: usize = 20_000;

/// Groups built-in resources are served from while stored under one of
/// them (`events` under core for `events.k8s.io`, `deployments` under `apps`
/// for `extensions`): a request in one names a key stored under another.
const COHABITING_GROUPS: &str = "('', 'apps', 'extensions', 'events.k8s.io', 'networking.k8s.io', 'policy')";

/// Whether two namespaces, either absent, are the same (SQLite's `IS`),
/// written so that the join can hash on the other columns.
fn same_namespace(a: &str, b: &str) -> String {
    format!("({a}.namespace = {b}.namespace OR ({a}.namespace IS NULL AND {b}.namespace IS NULL))")
}

/// The PostgreSQL [`AuditStage`]: requests gathered in memory and written
/// a batch at a time by one statement. Whether the database held a request
/// already is known only when its batch is written, so `push` answers false
/// only for a request the unwritten batch holds, and `staged` writes the
/// batch first to count exactly.
pub(in crate::store) struct AuditStaging<'a> {
    store: &'a Store,
    cluster: ClusterId,
    batch: RefCell<Vec<AuditRequest>>,
    /// The audit IDs `batch` holds: the first of a repeated ID is staged.
    ids: RefCell<HashSet<String>>,
    staged: Cell<u64>,
    /// A failure to write the batch `staged` wrote, for `finish` to report.
    failed: RefCell<Option<StoreError>>,
}

impl AuditRecorder for Store {
    fn stage_audit(&self, cluster: ClusterId) -> Result<Box<dyn AuditStage + '_>, StoreError> {
        Ok(Box::new(AuditStaging {
            store: self,
            cluster,
            batch: RefCell::new(Vec::with_capacity(STAGE_BATCH)),
            ids: RefCell::new(HashSet::new()),
            staged: Cell::new(0),
            failed: RefCell::new(None),
        }))
    }

    fn join_audit(&self, cluster: ClusterId, join: &JoinKey<'_>) -> Result<JoinSummary, StoreError> {
        self.in_transaction(|| {
            // The key of the request's group, else of a cohabiting one.
            for group_match in [
                "k.api_group = r.api_group".to_string(),
                format!("k.api_group IN {COHABITING_GROUPS} AND r.api_group IN {COHABITING_GROUPS}"),
            ] {
                self.execute(
                    &format!(
                        "UPDATE audit_requests a SET key_id = m.key_id \
                         FROM (SELECT r.id, min(k.id) AS key_id FROM audit_requests r \
                           JOIN keys k ON k.cluster_id = r.cluster_id AND k.resource = r.resource \
                             AND k.name = r.name AND {} \
                           WHERE r.cluster_id = $1 AND r.key_id IS NULL AND r.name IS NOT NULL AND {group_match} \
                           GROUP BY r.id) m \
                         WHERE a.id = m.id",
                        same_namespace("k", "r")
                    ),
                    &[&cluster],
                )?;
            }
            // A create named by generateName: the key its response's
            // revision wrote (the least, should one revision hold two).
            self.execute(
                &format!(
                    "UPDATE audit_requests a SET key_id = m.key_id \
                     FROM (SELECT r.id, min(v.key_id) AS key_id FROM audit_requests r \
                       JOIN revisions v ON v.mod_revision = r.response_revision \
                       JOIN keys k ON k.id = v.key_id AND k.cluster_id = r.cluster_id AND k.resource = r.resource \
                         AND {} \
                       WHERE r.cluster_id = $1 AND r.key_id IS NULL AND r.name IS NULL \
                         AND r.response_revision IS NOT NULL \
                       GROUP BY r.id) m \
                     WHERE a.id = m.id",
                    same_namespace("k", "r")
                ),
                &[&cluster],
            )?;
            self.execute(
                "DELETE FROM revision_writers WHERE request_id IN (SELECT id FROM audit_requests WHERE cluster_id = $1)",
                &[&cluster],
            )?;
            self.execute(
                "UPDATE audit_requests SET outcome = 'unmatched' WHERE cluster_id = $1",
                &[&cluster],
            )?;
            let keys: Vec<i64> = self
                .query(
                    "SELECT DISTINCT key_id FROM audit_requests WHERE cluster_id = $1 AND key_id IS NOT NULL ORDER BY key_id",
                    &[&cluster],
                )?
                .iter()
                .map(|r| r.get(0))
                .collect();
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
}

impl Store {
    /// A key's revisions in order, each with when the clock says it was
    /// written, in one query.
    fn key_revisions(&self, cluster: ClusterId, key: i64) -> Result<Vec<KeyRevision>, StoreError> {
        self.query(
            &format!(
                "SELECT r.mod_revision, r.version, r.deleted, r.creation_timestamp, \
                 r.deletion_timestamp IS NOT NULL AND coalesce(r.finalizers, '[]') = '[]', {} \
                 FROM revisions r WHERE r.key_id = $1 AND r.deleted_after IS NULL ORDER BY r.mod_revision",
                crate::store::clock::interval_columns("$2", "r.mod_revision")
            ),
            &[&key, &cluster],
        )?
        .iter()
        .map(|r| {
            Ok(KeyRevision {
                mod_revision: r.get(0),
                version: r.get(1),
                deleted: r.get(2),
                creation_timestamp: r.get(3),
                written: crate::store::clock::interval(r.get(5), r.get(6)),
                deleting: r.get(4),
            })
        })
        .collect()
    }

    /// A key's staged requests in the order they were answered.
    fn key_requests(&self, key: i64) -> Result<Vec<KeyRequest>, StoreError> {
        let mut requests = self
            .query(
                "SELECT id, verb, subresource, code, response_revision, precondition_revision, time \
                 FROM audit_requests WHERE key_id = $1",
                &[&key],
            )?
            .iter()
            .map(|r| {
                let time: String = r.get(6);
                Ok(KeyRequest {
                    id: r.get(0),
                    verb: r.get(1),
                    subresource: r.get(2),
                    code: self.code(r, 3)?,
                    response_revision: r.get(4),
                    precondition_revision: r.get(5),
                    time: time
                        .parse()
                        .map_err(|e| self.damaged("audit_requests.time", format!("{time:?}: {e}")))?,
                })
            })
            .collect::<Result<Vec<_>, StoreError>>()?;
        requests.sort_by_key(|r| (r.time, r.id));
        Ok(requests)
    }

    /// The HTTP status column `at` holds.
    fn code(&self, r: &Row, at: usize) -> Result<Option<u16>, StoreError> {
        r.get::<_, Option<i64>>(at)
            .map(|c| u16::try_from(c).map_err(|e| self.damaged("audit_requests.code", format!("{c}: {e}"))))
            .transpose()
    }

    fn save_attribution(&self, key: i64, found: &KeyAttribution) -> Result<(), StoreError> {
        let (ids, outcomes): (Vec<i64>, Vec<&str>) =
            found.outcomes.iter().map(|(id, o)| (*id, o.as_str())).unzip();
        self.execute(
            "UPDATE audit_requests a SET outcome = u.outcome \
             FROM unnest($1::bigint[], $2::text[]) AS u(id, outcome) WHERE a.id = u.id",
            &[&ids, &outcomes],
        )?;
        let mut revisions = Vec::with_capacity(found.writers.len());
        let mut requests = Vec::with_capacity(found.writers.len());
        let mut matches = Vec::with_capacity(found.writers.len());
        for (revision, id, m) in &found.writers {
            revisions.push(*revision);
            requests.push(*id);
            matches.push(m.as_str());
        }
        self.execute(
            "INSERT INTO revision_writers (key_id, mod_revision, request_id, match) \
             SELECT $1, * FROM unnest($2::bigint[], $3::bigint[], $4::text[])",
            &[&key, &revisions, &requests, &matches],
        )?;
        Ok(())
    }

    fn join_summary(&self, cluster: ClusterId) -> Result<JoinSummary, StoreError> {
        let mut summary = JoinSummary::default();
        for r in self.query(
            "SELECT outcome, count(*), count(key_id) FROM audit_requests WHERE cluster_id = $1 GROUP BY outcome",
            &[&cluster],
        )? {
            let name: String = r.get(0);
            let outcome = Outcome::parse(&name).map_err(|e| self.damaged("audit_requests.outcome", e))?;
            summary.count(outcome, r.get::<_, i64>(1) as u64, r.get::<_, i64>(2) as u64);
        }
        let counts = self
            .query_opt(
                "SELECT count(*) FILTER (WHERE w.match = 'exact'), count(*) FILTER (WHERE w.match = 'by-order') \
                 FROM revision_writers w JOIN audit_requests a ON a.id = w.request_id WHERE a.cluster_id = $1",
                &[&cluster],
            )?
            .expect("an aggregate's row");
        summary.exact = counts.get::<_, i64>(0) as u64;
        summary.by_order = counts.get::<_, i64>(1) as u64;
        Ok(summary)
    }
}

impl AuditStaging<'_> {
    /// Writes the batch in one statement, in the order it was pushed (the
    /// ids the join breaks ties of time with), skipping the requests the
    /// database holds already.
    fn write_batch(&self) -> Result<(), StoreError> {
        let batch = std::mem::take(&mut *self.batch.borrow_mut());
        self.ids.borrow_mut().clear();
        if batch.is_empty() {
            return Ok(());
        }
        let json = |v: &[String]| serde_json::Value::from(v.to_vec()).to_string();
        let text = |f: fn(&AuditRequest) -> &str| batch.iter().map(f).collect::<Vec<_>>();
        let maybe = |f: fn(&AuditRequest) -> Option<&str>| batch.iter().map(f).collect::<Vec<_>>();
        let number = |f: fn(&AuditRequest) -> Option<i64>| batch.iter().map(f).collect::<Vec<_>>();
        let groups: Vec<String> = batch.iter().map(|r| json(&r.groups)).collect();
        let source_ips: Vec<String> = batch.iter().map(|r| json(&r.source_ips)).collect();
        let added = self.store.execute(
            "INSERT INTO audit_requests (cluster_id, audit_id, verb, api_group, resource, namespace, name, \
             subresource, username, groups, impersonated_user, user_agent, source_ips, code, level, \
             response_revision, precondition_revision, time, log) \
             SELECT $1, audit_id, verb, api_group, resource, namespace, name, subresource, username, groups, \
               impersonated_user, user_agent, source_ips, code, level, response_revision, precondition_revision, time, \
               log \
             FROM unnest($2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::text[], \
               $9::text[], $10::text[], $11::text[], $12::text[], $13::text[], $14::bigint[], $15::text[], \
               $16::bigint[], $17::bigint[], $18::text[], $19::text[]) WITH ORDINALITY \
               AS b(audit_id, verb, api_group, resource, namespace, name, subresource, username, groups, \
                 impersonated_user, user_agent, source_ips, code, level, response_revision, precondition_revision, \
                 time, log, pushed) \
             ORDER BY pushed \
             ON CONFLICT (cluster_id, audit_id) DO NOTHING",
            &[
                &self.cluster,
                &text(|r| &r.audit_id),
                &text(|r| &r.verb),
                &text(|r| &r.api_group),
                &text(|r| &r.resource),
                &maybe(|r| r.namespace.as_deref()),
                &maybe(|r| r.name.as_deref()),
                &maybe(|r| r.subresource.as_deref()),
                &text(|r| &r.user),
                &groups,
                &maybe(|r| r.impersonated_user.as_deref()),
                &maybe(|r| r.user_agent.as_deref()),
                &source_ips,
                &number(|r| r.code.map(i64::from)),
                &text(|r| &r.level),
                &number(|r| r.response_revision),
                &number(|r| r.precondition_revision),
                &text(|r| &r.time),
                &text(|r| &r.log),
            ],
        )?;
        self.staged.set(self.staged.get() + added);
        Ok(())
    }

    /// The failure an earlier `staged` met writing the batch, if any.
    fn earlier_failure(&self) -> Result<(), StoreError> {
        self.failed.borrow_mut().take().map_or(Ok(()), Err)
    }
}

impl AuditStage for AuditStaging<'_> {
    fn push(&mut self, r: &AuditRequest) -> Result<bool, StoreError> {
        self.earlier_failure()?;
        if !self.ids.borrow_mut().insert(r.audit_id.clone()) {
            return Ok(false);
        }
        self.batch.borrow_mut().push(r.clone());
        if self.batch.borrow().len() >= STAGE_BATCH {
            self.write_batch()?;
        }
        Ok(true)
    }

    fn staged(&self) -> u64 {
        if let Err(e) = self.write_batch() {
            self.failed.replace(Some(e));
        }
        self.staged.get()
    }

    fn finish(self: Box<Self>) -> Result<(), StoreError> {
        self.earlier_failure()?;
        self.write_batch()?;
        // The join follows at once.
        self.store
            .refresh_statistics("audit_requests", self.staged.get(), &["audit_requests"])
    }
}

impl crate::store::reader::AuditReads for Store {
    fn audited_requests(
        &self,
        cluster: ClusterId,
        visit: &mut dyn FnMut(&AuditedObject, &[AuditedRequest]),
    ) -> Result<(), StoreError> {
        let mut objects = ByObject::new(visit);
        self.each_page(
            "SELECT a.api_group, a.resource, a.namespace, a.name, k.key, a.audit_id, a.username, a.user_agent, \
             a.verb, a.subresource, a.code, a.outcome, a.time, \
             (SELECT min(w.mod_revision) FROM revision_writers w WHERE w.request_id = a.id) \
             FROM audit_requests a LEFT JOIN keys k ON k.id = a.key_id \
             WHERE a.cluster_id = $1 AND a.name IS NOT NULL \
             ORDER BY a.api_group COLLATE \"C\", a.resource COLLATE \"C\", a.namespace COLLATE \"C\" NULLS FIRST, \
               a.name COLLATE \"C\"",
            &[&cluster],
            &mut |rows| {
                for r in rows {
                    let object = AuditedObject {
                        api_group: r.get(0),
                        resource: r.get(1),
                        namespace: r.get(2),
                        name: r.get(3),
                        key: r
                            .get::<_, Option<Vec<u8>>>(4)
                            .map(|k| String::from_utf8_lossy(&k).into_owned()),
                    };
                    let outcome: String = r.get(11);
                    let time_text: String = r.get(12);
                    let request = AuditedRequest {
                        audit_id: r.get(5),
                        user: r.get(6),
                        user_agent: r.get(7),
                        verb: r.get(8),
                        subresource: r.get(9),
                        code: self.code(r, 10)?,
                        outcome: Outcome::parse(&outcome).map_err(|e| self.damaged("audit_requests.outcome", e))?,
                        time: time_text
                            .parse()
                            .map_err(|e| self.damaged("audit_requests.time", format!("{time_text:?}: {e}")))?,
                        time_text,
                        revision: r.get(13),
                    };
                    objects.push(object, request);
                }
                Ok(())
            },
        )?;
        objects.finish();
        Ok(())
    }
}
