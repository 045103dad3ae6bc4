//! Audit requests and who wrote each revision, written once over [`Sql`]:
//! staging what the logs say, joining it to the stored revisions key by
//! key, and reading the requests back per object.

use super::audit::{
    AuditRecorder, AuditRequest, AuditStage, AuditedObject, AuditedRequest, ByObject, JoinKey, JoinSummary,
    KeyRequest, KeyRevision, Outcome,
};
use super::clock::{interval, interval_columns};
use super::reader::AuditReads;
use super::sql::{id_list, one_row, Cursor, Sql};
use super::tables::{columns, Cell};
use super::{ClusterId, KeyId, StoreError};
use std::collections::{HashMap, HashSet};

/// Requests written per transaction: a log of millions of events commits
/// as it goes.
const STAGE_BATCH: usize = 20_000;

/// Keys joined together: their revisions and requests are read with one
/// statement each, and what the join decides written with one each.
const JOINED_KEYS: usize = 256;

/// Requests joined together at most, unless one key has more (bounds the
/// memory a group of keys holds).
const JOINED_REQUESTS: i64 = 20_000;

/// Groups built-in resources are served from while stored under one of
/// them (`events` under core for `events.k8s.io`, `deployments` under `apps`
/// for `extensions`): a request in one names a key stored under another.
const COHABITING_GROUPS: &str = "('', 'apps', 'extensions', 'events.k8s.io', 'networking.k8s.io', 'policy')";

/// One request as the cells of the columns `audit_requests` holds (the
/// join fills in its key and outcome later).
fn request_cells(cluster: ClusterId, r: &AuditRequest) -> impl Iterator<Item = Cell> + '_ {
    let text = |t: &str| Cell::Text(t.to_string());
    let opt_text = move |t: &Option<String>| t.as_deref().map_or(Cell::Null, text);
    let opt_int = |n: Option<i64>| n.map_or(Cell::Null, Cell::Int);
    let json = |v: &[String]| Cell::Text(serde_json::Value::from(v.to_vec()).to_string());
    columns("audit_requests").iter().map(move |column| match *column {
        "cluster_id" => Cell::from(cluster),
        "audit_id" => text(&r.audit_id),
        "verb" => text(&r.verb),
        "api_group" => text(&r.api_group),
        "resource" => text(&r.resource),
        "namespace" => opt_text(&r.namespace),
        "name" => opt_text(&r.name),
        "subresource" => opt_text(&r.subresource),
        "key_id" => Cell::Null,
        "username" => text(&r.user),
        "groups" => json(&r.groups),
        "impersonated_user" => opt_text(&r.impersonated_user),
        "user_agent" => opt_text(&r.user_agent),
        "source_ips" => json(&r.source_ips),
        "code" => opt_int(r.code.map(i64::from)),
        "level" => text(&r.level),
        "response_revision" => r.response_revision.map_or(Cell::Null, Cell::from),
        "precondition_revision" => r.precondition_revision.map_or(Cell::Null, Cell::from),
        "time" => text(&r.time),
        "outcome" => text(Outcome::Unmatched.as_str()),
        "log" => text(&r.log),
        other => unreachable!("audit_requests.{other} is no column of a request"),
    })
}

/// The [`AuditStage`]: requests gathered in memory and written a batch at
/// a time, in the order they were pushed (the ids the join breaks ties of
/// time with), each batch one transaction.
struct Staging<'s, T: Sql + ?Sized> {
    db: &'s T,
    cluster: ClusterId,
    /// Cells of [`request_cells`] not written yet.
    batch: Vec<Cell>,
    /// The audit IDs `batch` holds: the first of a repeated ID is staged.
    ids: HashSet<String>,
    staged: u64,
}

impl<T: Sql + ?Sized> Staging<'_, T> {
    /// Writes the batch, skipping the requests the database holds already.
    fn write_batch(&mut self) -> Result<(), StoreError> {
        if self.batch.is_empty() {
            return Ok(());
        }
        let batch = std::mem::take(&mut self.batch);
        self.ids.clear();
        let mut added = 0;
        self.db.atomically(&mut || {
            added = self.db.insert_new_rows(
                "audit_requests",
                columns("audit_requests"),
                &["cluster_id", "audit_id"],
                &batch,
            )?;
            Ok(())
        })?;
        self.staged += added;
        Ok(())
    }
}

impl<T: Sql + ?Sized> AuditStage for Staging<'_, T> {
    fn push(&mut self, r: &AuditRequest) -> Result<(), StoreError> {
        if self.ids.insert(r.audit_id.clone()) {
            self.batch.extend(request_cells(self.cluster, r));
        }
        if self.ids.len() >= STAGE_BATCH {
            self.write_batch()?;
        }
        Ok(())
    }

    fn staged(&mut self) -> Result<u64, StoreError> {
        self.write_batch()?;
        Ok(self.staged)
    }

    fn finish(mut self: Box<Self>) -> Result<(), StoreError> {
        self.write_batch()?;
        // The join follows at once.
        self.db.loaded(0, self.staged)
    }
}

impl<T: Sql + ?Sized> AuditRecorder for T {
    fn stage_audit(&self, cluster: ClusterId) -> Result<Box<dyn AuditStage + '_>, StoreError> {
        Ok(Box::new(Staging {
            db: self,
            cluster,
            batch: Vec::new(),
            ids: HashSet::new(),
            staged: 0,
        }))
    }

    fn join_audit(&self, cluster: ClusterId, join: &JoinKey<'_>) -> Result<JoinSummary, StoreError> {
        let mut summary = JoinSummary::default();
        self.atomically(&mut || {
            summary = join_all(self, cluster, join)?;
            Ok(())
        })?;
        Ok(summary)
    }
}

/// The join, in the caller's transaction.
fn join_all(
    db: &(impl Sql + ?Sized),
    cluster: ClusterId,
    join: &JoinKey<'_>,
) -> Result<JoinSummary, StoreError> {
    let same_namespace = (db.dialect().same)("k.namespace", "r.namespace");
    let at = [Cell::from(cluster)];
    // The key of the request's group, else of a cohabiting one.
    for group_match in [
        "k.api_group = r.api_group".to_string(),
        format!("k.api_group IN {COHABITING_GROUPS} AND r.api_group IN {COHABITING_GROUPS}"),
    ] {
        db.execute(
            &format!(
                "UPDATE audit_requests AS a SET key_id = m.key_id \
                 FROM (SELECT r.id, min(k.id) AS key_id FROM audit_requests r \
                   JOIN keys k ON k.cluster_id = r.cluster_id AND k.resource = r.resource \
                     AND k.name = r.name AND {same_namespace} \
                   WHERE r.cluster_id = $1 AND r.key_id IS NULL AND r.name IS NOT NULL AND {group_match} \
                   GROUP BY r.id) AS m \
                 WHERE a.id = m.id"
            ),
            &at,
        )?;
    }
    // A create named by generateName: the key its response's revision
    // wrote (the least, should one revision hold two).
    db.execute(
        &format!(
            "UPDATE audit_requests AS a SET key_id = m.key_id \
             FROM (SELECT r.id, min(v.key_id) AS key_id FROM audit_requests r \
               JOIN revisions v ON v.mod_revision = r.response_revision \
               JOIN keys k ON k.id = v.key_id AND k.cluster_id = r.cluster_id AND k.resource = r.resource \
                 AND {same_namespace} \
               WHERE r.cluster_id = $1 AND r.key_id IS NULL AND r.name IS NULL \
                 AND r.response_revision IS NOT NULL \
               GROUP BY r.id) AS m \
             WHERE a.id = m.id"
        ),
        &at,
    )?;
    db.execute(
        "DELETE FROM revision_writers WHERE request_id IN (SELECT id FROM audit_requests WHERE cluster_id = $1)",
        &at,
    )?;
    db.execute(
        "UPDATE audit_requests SET outcome = 'unmatched' WHERE cluster_id = $1",
        &at,
    )?;
    let requests = db.typed("audit_requests");
    let keys = db.rows(
        "audit_requests",
        "SELECT key_id, count(*) FROM audit_requests WHERE cluster_id = $1 AND key_id IS NOT NULL \
         GROUP BY key_id ORDER BY key_id",
        &at,
    )?;
    let (mut unattributed, mut group, mut held) = (0, Vec::new(), 0);
    for row in keys {
        let (key, n) = (
            KeyId(requests.int(&row[0], "key_id")?),
            requests.int(&row[1], "count")?,
        );
        if !group.is_empty() && (group.len() >= JOINED_KEYS || held + n > JOINED_REQUESTS) {
            unattributed += join_keys(db, cluster, &group, join)?;
            (group, held) = (Vec::new(), 0);
        }
        group.push(key);
        held += n;
    }
    if !group.is_empty() {
        unattributed += join_keys(db, cluster, &group, join)?;
    }
    let mut summary = join_summary(db, cluster)?;
    summary.unattributed_revisions = unattributed;
    Ok(summary)
}

/// Joins the requests of `keys` to their revisions, each key on its own,
/// with one read of their revisions, one of their requests and one write
/// of each result for them all: the revisions left unattributed.
fn join_keys(
    db: &(impl Sql + ?Sized),
    cluster: ClusterId,
    keys: &[KeyId],
    join: &JoinKey<'_>,
) -> Result<u64, StoreError> {
    let ids = id_list(&keys.iter().map(|k| k.0).collect::<Vec<_>>());
    let mut revisions = key_revisions(db, cluster, &ids)?;
    let mut requests = key_requests(db, &ids)?;
    let (mut outcomes, mut writers, mut unattributed) = (Vec::new(), Vec::new(), 0);
    for &key in keys {
        let found = join(
            &revisions.remove(&key).unwrap_or_default(),
            &requests.remove(&key).unwrap_or_default(),
        );
        for (id, o) in &found.outcomes {
            outcomes.extend([Cell::Int(*id), Cell::Text(o.as_str().to_string())]);
        }
        for (revision, id, m) in &found.writers {
            writers.extend([
                Cell::from(key),
                Cell::from(*revision),
                Cell::Int(*id),
                Cell::Text(m.as_str().to_string()),
            ]);
        }
        unattributed += found.unattributed;
    }
    db.update_rows(
        "audit_requests",
        &[("id", "bigint"), ("outcome", "text")],
        1,
        &outcomes,
    )?;
    db.insert_rows(
        "revision_writers",
        &["key_id", "mod_revision", "request_id", "match"],
        &writers,
    )?;
    Ok(unattributed)
}

/// The revisions of the keys listed in `ids` ([`id_list`]), each key's in
/// order, each with when the clock says it was written.
fn key_revisions(
    db: &(impl Sql + ?Sized),
    cluster: ClusterId,
    ids: &Cell,
) -> Result<HashMap<KeyId, Vec<KeyRevision>>, StoreError> {
    let mut revisions: HashMap<KeyId, Vec<KeyRevision>> = HashMap::new();
    db.each(
        "revisions",
        &format!(
            "SELECT r.key_id, r.mod_revision, r.version, r.deleted, r.creation_timestamp, \
             CASE WHEN r.deletion_timestamp IS NOT NULL AND coalesce(r.finalizers, '[]') = '[]' THEN 1 ELSE 0 END, {} \
             FROM revisions r WHERE r.key_id IN {} AND r.deleted_after IS NULL ORDER BY r.key_id, r.mod_revision",
            interval_columns("$2", "r.mod_revision"),
            db.dialect().id_list
        ),
        &[ids.clone(), Cell::from(cluster)],
        &mut |row| {
            let mut c = Cursor::new(db, "revisions", row);
            let key = KeyId(c.int("key_id")?);
            revisions.entry(key).or_default().push(KeyRevision {
                mod_revision: c.revision("mod_revision")?,
                version: c.int("version")?,
                deleted: c.flag("deleted")?,
                creation_timestamp: c.opt_text("creation_timestamp")?,
                deleting: c.flag("deletion_timestamp")?,
                written: interval(
                    c.opt_int("clock_envelope.earliest")?,
                    c.opt_int("clock_envelope.latest")?,
                ),
            });
            Ok(())
        },
    )?;
    Ok(revisions)
}

/// A status code as stored: what no HTTP status is, is damage.
fn code(c: &mut Cursor) -> Result<Option<u16>, StoreError> {
    c.opt_int("code")?
        .map(|n| u16::try_from(n).map_err(|e| c.damage("code", format!("{n}: {e}"))))
        .transpose()
}

/// A `stageTimestamp` as stored: text that is no time is damage.
fn stage_time(c: &mut Cursor) -> Result<(jiff::Timestamp, String), StoreError> {
    let text = c.text("time")?;
    let time = text
        .parse()
        .map_err(|e| c.damage("time", format!("{text:?}: {e}")))?;
    Ok((time, text))
}

/// The staged requests of the keys listed in `ids` ([`id_list`]), each
/// key's in the order they were answered.
fn key_requests(db: &(impl Sql + ?Sized), ids: &Cell) -> Result<HashMap<KeyId, Vec<KeyRequest>>, StoreError> {
    let mut requests: HashMap<KeyId, Vec<KeyRequest>> = HashMap::new();
    db.each(
        "audit_requests",
        &format!(
            "SELECT key_id, id, verb, subresource, code, response_revision, precondition_revision, time \
             FROM audit_requests WHERE key_id IN {}",
            db.dialect().id_list
        ),
        std::slice::from_ref(ids),
        &mut |row| {
            let mut c = Cursor::new(db, "audit_requests", row);
            let key = KeyId(c.int("key_id")?);
            requests.entry(key).or_default().push(KeyRequest {
                id: c.int("id")?,
                verb: c.text("verb")?,
                subresource: c.opt_text("subresource")?,
                code: code(&mut c)?,
                response_revision: c.opt_revision("response_revision")?,
                precondition_revision: c.opt_revision("precondition_revision")?,
                time: stage_time(&mut c)?.0,
            });
            Ok(())
        },
    )?;
    for key in requests.values_mut() {
        key.sort_by_key(|r| (r.time, r.id));
    }
    Ok(requests)
}

/// The counts of a join: requests by outcome, writers by match.
fn join_summary(db: &(impl Sql + ?Sized), cluster: ClusterId) -> Result<JoinSummary, StoreError> {
    let mut summary = JoinSummary::default();
    let at = [Cell::from(cluster)];
    db.each(
        "audit_requests",
        "SELECT outcome, count(*), count(key_id) FROM audit_requests WHERE cluster_id = $1 GROUP BY outcome",
        &at,
        &mut |row| {
            let mut c = Cursor::new(db, "audit_requests", row);
            let outcome = c.parsed("outcome", Outcome::parse)?;
            let outcome = outcome.ok_or_else(|| c.damage("outcome", "NULL"))?;
            let (n, keyed) = (c.int("count")?, c.int("count")?);
            summary.count(outcome, n.unsigned_abs(), keyed.unsigned_abs());
            Ok(())
        },
    )?;
    let (exact, by_order) = one_row(
        db,
        "revision_writers",
        "SELECT count(*) FILTER (WHERE w.match = 'exact'), count(*) FILTER (WHERE w.match = 'by-order') \
         FROM revision_writers w JOIN audit_requests a ON a.id = w.request_id WHERE a.cluster_id = $1",
        &at,
        |c| Ok((c.int("count")?, c.int("count")?)),
    )?;
    summary.exact = exact.unsigned_abs();
    summary.by_order = by_order.unsigned_abs();
    Ok(summary)
}

impl<T: Sql + ?Sized> AuditReads for T {
    fn audited_requests(
        &self,
        cluster: ClusterId,
        visit: &mut dyn FnMut(&AuditedObject, &[AuditedRequest]),
    ) -> Result<(), StoreError> {
        let mut objects = ByObject::new(visit);
        let byte_order = self.dialect().byte_order;
        self.each(
            "audit_requests",
            &format!(
                "SELECT a.api_group, a.resource, a.namespace, a.name, k.key, a.audit_id, a.username, \
                 a.user_agent, a.verb, a.subresource, a.code, a.outcome, a.time, \
                 (SELECT min(w.mod_revision) FROM revision_writers w WHERE w.request_id = a.id) \
                 FROM audit_requests a LEFT JOIN keys k ON k.id = a.key_id \
                 WHERE a.cluster_id = $1 AND a.name IS NOT NULL \
                 ORDER BY a.api_group{byte_order}, a.resource{byte_order}, a.namespace{byte_order} NULLS FIRST, \
                   a.name{byte_order}"
            ),
            &[Cell::from(cluster)],
            &mut |row| {
                let mut c = Cursor::new(self, "audit_requests", row);
                let object = AuditedObject {
                    api_group: c.text("api_group")?,
                    resource: c.text("resource")?,
                    namespace: c.opt_text("namespace")?,
                    name: c.text("name")?,
                    key: c
                        .opt_bytes("keys.key")?
                        .map(|k| String::from_utf8_lossy(&k).into_owned()),
                };
                let (audit_id, user) = (c.text("audit_id")?, c.text("username")?);
                let (user_agent, verb) = (c.opt_text("user_agent")?, c.text("verb")?);
                let (subresource, code) = (c.opt_text("subresource")?, code(&mut c)?);
                let outcome = c.parsed("outcome", Outcome::parse)?;
                let outcome = outcome.ok_or_else(|| c.damage("outcome", "NULL"))?;
                let (time, time_text) = stage_time(&mut c)?;
                let request = AuditedRequest {
                    audit_id,
                    user,
                    user_agent,
                    verb,
                    subresource,
                    code,
                    outcome,
                    time,
                    time_text,
                    revision: c.opt_revision("revision_writers.mod_revision")?,
                };
                objects.push(object, request);
                Ok(())
            },
        )?;
        objects.finish();
        Ok(())
    }
}
