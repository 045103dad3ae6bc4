//! Findings in the PostgreSQL database: written as `analyze` finds them,
//! replacing a cluster's earlier findings in one transaction, and read back
//! a page at a time, most severe first.

use super::Store;
use crate::store::audit::WrittenBy;
use crate::store::audit::{written_by, WRITTEN_BY_COLUMNS};
use crate::store::finding::{
    stored_json, Finding, FindingColumns, FindingCount, FindingIter, FindingQuery, FindingsWriter, Kept,
    Replaced, Severity, StoredFinding, StoredRow,
};
use crate::store::paged::{PageSource, Paged};
use crate::store::reader::ClusterReads;
use crate::store::sql::Cursor;
use crate::store::{ObjectFilter, Scope, StoreError};
use postgres::binary_copy::BinaryCopyInWriter;
use postgres::types::Type;
use postgres::Row;
use std::collections::{BTreeMap, HashMap, VecDeque};

/// Column `at` of a row.
fn get<'r, T: postgres::types::FromSql<'r>>(store: &Store, r: &'r Row, at: usize) -> Result<T, StoreError> {
    r.try_get(at).map_err(|e| store.err(e))
}

/// The namespace and resource of stored keys, by cluster row id and key.
type KeyNames = HashMap<(i64, String), (Option<String>, Option<String>)>;

/// Findings read per query.
const PAGE: i64 = 500;

/// Findings a writer holds before it sends them, in one `COPY`.
const BATCH: usize = 1000;

/// A finding put and not sent yet, as its columns hold it.
struct Unsent {
    detector: &'static str,
    severity: Severity,
    keys: String,
    revisions: String,
    summary: String,
    details: String,
}

/// The PostgreSQL [`FindingsWriter`]: one transaction from start to commit,
/// holding the identities of the findings it replaces and at most [`BATCH`]
/// new findings. Those go in binary `COPY`s of a batch each, so that the
/// connection is free for the analysis's own reads between puts.
struct Writer<'s> {
    store: &'s Store,
    cluster: i64,
    /// Stored findings of the detectors not put again yet.
    replaced: Replaced,
    analyzed_at: String,
    unsent: Vec<Unsent>,
    open: bool,
}

impl Writer<'_> {
    /// Sends the findings put since the last batch.
    fn send(&mut self) -> Result<(), StoreError> {
        if self.unsent.is_empty() {
            return Ok(());
        }
        let (cluster, analyzed_at, unsent) = (self.cluster, &self.analyzed_at, &mut self.unsent);
        self.store.with_client(|client| {
            let sink = client.copy_in(
                "COPY findings (cluster_id, detector, severity, keys, revisions, summary, details, analyzed_at) \
                 FROM STDIN BINARY",
            )?;
            let mut rows = BinaryCopyInWriter::new(
                sink,
                &[
                    Type::INT8,
                    Type::TEXT,
                    Type::TEXT,
                    Type::TEXT,
                    Type::TEXT,
                    Type::TEXT,
                    Type::TEXT,
                    Type::TEXT,
                ],
            );
            for f in unsent.drain(..) {
                rows.write(&[
                    &cluster,
                    &f.detector,
                    &f.severity.as_str(),
                    &f.keys,
                    &f.revisions,
                    &f.summary,
                    &f.details,
                    analyzed_at,
                ])?;
            }
            rows.finish()
        })?;
        Ok(())
    }
}

impl FindingsWriter for Writer<'_> {
    fn put(&mut self, f: &Finding) -> Result<(), StoreError> {
        let columns = FindingColumns::of(f);
        match self.replaced.take(f, &columns) {
            Some(Kept::AsIs) => return Ok(()),
            Some(Kept::Rewritten(id)) => {
                self.store.execute(
                    "UPDATE findings SET severity = $2, summary = $3, details = $4 WHERE id = $1",
                    &[&id, &f.severity.as_str(), &f.summary, &columns.details],
                )?;
                return Ok(());
            }
            None => {}
        }
        self.unsent.push(Unsent {
            detector: f.detector,
            severity: f.severity,
            keys: columns.keys,
            revisions: columns.revisions,
            summary: f.summary.clone(),
            details: columns.details,
        });
        if self.unsent.len() >= BATCH {
            self.send()?;
        }
        Ok(())
    }

    fn commit(mut self: Box<Self>) -> Result<(), StoreError> {
        self.send()?;
        for ids in self.replaced.left().chunks(10_000) {
            self.store
                .execute("DELETE FROM findings WHERE id = ANY($1)", &[&ids])?;
        }
        self.open = false;
        self.store.commit()
    }
}

impl Drop for Writer<'_> {
    /// A writer that did not commit (the analysis failed) leaves the stored
    /// findings as they were.
    fn drop(&mut self) {
        if self.open {
            self.store.rollback();
        }
    }
}

/// The pages of a [`FindingQuery`]: severity by severity, most severe
/// first, each in id order. The keys and writers a page's findings name are
/// looked up in one query per page, not one per finding.
struct Pages<'s> {
    store: &'s Store,
    query: FindingQuery,
    /// Severities still to read, the next last.
    severities: Vec<Severity>,
    /// The id the next page starts after.
    after: i64,
    /// Whether any revision has an attributed writer (once asked).
    attributed: Option<bool>,
    /// Cluster labels by row id (once read).
    labels: Option<HashMap<i64, String>>,
}

impl Store {
    /// Whether `attribute` attributed any revision.
    fn any_writers(&self) -> Result<bool, StoreError> {
        let row = self.query_opt("SELECT EXISTS (SELECT 1 FROM revision_writers)", &[])?;
        Ok(row.is_some_and(|r| r.get(0)))
    }

    /// Who wrote the revisions of each finding's first key that it names
    /// (`cluster` is a finding's cluster row id).
    fn attach_writers(&self, found: &mut [(i64, StoredFinding)]) -> Result<(), StoreError> {
        let (mut clusters, mut keys, mut revisions) = (Vec::new(), Vec::new(), Vec::new());
        for (cluster, f) in found.iter() {
            if let Some(key) = f.keys.first() {
                for revision in &f.revisions {
                    clusters.push(*cluster);
                    keys.push(key.as_str());
                    revisions.push(*revision);
                }
            }
        }
        if keys.is_empty() {
            return Ok(());
        }
        let rows = self.query(
            &format!(
                "SELECT q.c, q.key, w.mod_revision, {WRITTEN_BY_COLUMNS} \
             FROM unnest($1::bigint[], $2::text[], $3::bigint[]) AS q(c, key, rev) \
             JOIN keys k ON k.cluster_id = q.c AND k.key = convert_to(q.key, 'UTF8') \
             JOIN revision_writers w ON w.key_id = k.id AND w.mod_revision = q.rev \
             JOIN audit_requests a ON a.id = w.request_id"
            ),
            &[&clusters, &keys, &revisions],
        )?;
        let mut writers: HashMap<(i64, String, i64), WrittenBy> = HashMap::new();
        let mut cells = Vec::new();
        for r in &rows {
            self.cells("revision_writers", r, &mut cells)?;
            let mut c = Cursor::new(self, "revision_writers", &cells);
            let at = (c.int("cluster_id")?, c.text("key")?, c.int("mod_revision")?);
            if let Some(w) = written_by(&mut c)? {
                writers.insert(at, w);
            }
        }
        for (cluster, f) in found.iter_mut() {
            let Some(key) = f.keys.first() else { continue };
            let mut by: BTreeMap<i64, WrittenBy> = BTreeMap::new();
            for revision in &f.revisions {
                if let Some(w) = writers.get(&(*cluster, key.clone(), *revision)) {
                    by.insert(*revision, w.clone());
                }
            }
            f.written_by = by;
        }
        Ok(())
    }

    /// The namespace and resource each stored key of `found` was stored
    /// with, by cluster row id and key.
    fn key_names(&self, found: &[(i64, StoredFinding)]) -> Result<KeyNames, StoreError> {
        let (clusters, keys): (Vec<i64>, Vec<&str>) = found
            .iter()
            .flat_map(|(cluster, f)| f.keys.iter().map(|k| (*cluster, k.as_str())))
            .unzip();
        let rows = self.query(
            "SELECT q.c, q.key, k.namespace, k.resource FROM unnest($1::bigint[], $2::text[]) AS q(c, key) \
             JOIN keys k ON k.cluster_id = q.c AND k.key = convert_to(q.key, 'UTF8')",
            &[&clusters, &keys],
        )?;
        rows.iter()
            .map(|r| {
                Ok((
                    (get(self, r, 0)?, get(self, r, 1)?),
                    (get(self, r, 2)?, get(self, r, 3)?),
                ))
            })
            .collect()
    }

    /// One stored finding from its row (`id, etcd cluster id, detector,
    /// severity, keys, revisions, summary, details, analyzed_at, cluster
    /// row id`), with its cluster row id.
    fn finding_row(
        &self,
        r: &Row,
        labels: &HashMap<i64, String>,
    ) -> Result<(i64, StoredFinding), StoreError> {
        let text = |i: usize| -> Result<String, StoreError> { get(self, r, i) };
        let severity = text(3)?;
        let json =
            stored_json(&text(4)?, &text(5)?, &text(7)?).map_err(|(column, e)| self.damaged(column, e))?;
        let cluster: i64 = get(self, r, 9)?;
        let cluster_id = text(1)?;
        Ok((
            cluster,
            StoredFinding {
                id: get(self, r, 0)?,
                cluster: labels
                    .get(&cluster)
                    .cloned()
                    .unwrap_or_else(|| cluster_id.clone()),
                cluster_id,
                detector: text(2)?,
                severity: Severity::parse(&severity).map_err(|e| self.damaged("findings.severity", e))?,
                keys: json.keys,
                revisions: json.revisions,
                summary: text(6)?,
                details: json.details,
                analyzed_at: text(8)?,
                written_by: Default::default(),
            },
        ))
    }
}

impl PageSource for Pages<'_> {
    type Row = StoredFinding;

    /// Reads the next page of the current severity into `page`; none
    /// when every severity is read.
    fn fill(&mut self, page: &mut VecDeque<StoredFinding>) -> Result<(), StoreError> {
        let store = self.store;
        // The cluster is chosen in the query; the rest key by key.
        let by_key = ObjectFilter {
            cluster: None,
            ..self.query.objects.clone()
        };
        let filtered = by_key != ObjectFilter::default();
        if self.labels.is_none() {
            let clusters = store.clusters()?;
            self.labels = Some(
                clusters
                    .into_iter()
                    .map(|c| (c.row, c.label().to_string()))
                    .collect(),
            );
        }
        let labels = self.labels.as_ref().expect("read above");
        while page.is_empty() {
            let Some(&severity) = self.severities.last() else {
                return Ok(());
            };
            let rows = store.query(
                "SELECT f.id, c.etcd_cluster_id, f.detector, f.severity, f.keys, f.revisions, f.summary, f.details, \
                 f.analyzed_at, f.cluster_id FROM findings f JOIN clusters c ON c.id = f.cluster_id \
                 WHERE f.severity = $1 AND f.id > $2 AND ($3::text IS NULL OR f.detector = $3::text) \
                 AND ($5::bigint IS NULL OR f.cluster_id = $5::bigint) ORDER BY f.id LIMIT $4",
                &[
                    &severity.as_str(),
                    &self.after,
                    &self.query.detector,
                    &PAGE,
                    &self.query.objects.cluster,
                ],
            )?;
            let mut found = rows
                .iter()
                .map(|r| store.finding_row(r, labels))
                .collect::<Result<Vec<_>, _>>()?;
            if let Some((_, last)) = found.last() {
                self.after = last.id;
            }
            if filtered {
                let names = store.key_names(&found)?;
                found.retain(|(cluster, f)| {
                    f.keys.iter().any(|key| {
                        let (namespace, resource) = names
                            .get(&(*cluster, key.clone()))
                            .map_or((None, None), |(n, r)| (n.as_deref(), r.as_deref()));
                        self.query.objects.matches(key, namespace, resource)
                    })
                });
            }
            if !found.is_empty() && *self.attributed.get_or_insert(store.any_writers()?) {
                store.attach_writers(&mut found)?;
            }
            page.extend(found.into_iter().map(|(_, f)| f));
            if (rows.len() as i64) < PAGE {
                self.severities.pop();
                self.after = 0;
            }
        }
        Ok(())
    }
}

impl crate::store::reader::FindingReads for Store {
    fn findings(&self, query: &FindingQuery) -> FindingIter<'_> {
        let severities = Severity::ALL
            .into_iter()
            .filter(|s| query.severity.is_none_or(|min| *s >= min))
            .collect();
        Box::new(Paged::new(Pages {
            store: self,
            query: query.clone(),
            severities,
            after: 0,
            attributed: None,
            labels: None,
        }))
    }

    fn finding_counts(
        &self,
        scope: &Scope,
        severity: Option<Severity>,
    ) -> Result<Vec<FindingCount>, StoreError> {
        let severities: Vec<String> = Severity::ALL
            .iter()
            .filter(|s| severity.is_none_or(|min| **s >= min))
            .map(|s| format!("'{}'", s.as_str()))
            .collect();
        let o = &scope.objects;
        let by_key =
            o.namespace.is_some() || o.resource.is_some() || o.key_prefix.is_some() || o.key.is_some();
        let sql = format!(
            r#"SELECT f.cluster_id, f.detector, count(*) FROM findings f
               WHERE f.severity IN ({}) AND ($6::bigint IS NULL OR f.cluster_id = $6::bigint)
               AND (($1::bigint IS NULL AND $2::bigint IS NULL) OR jsonb_array_length(f.revisions::jsonb) = 0
                 OR EXISTS (SELECT 1 FROM jsonb_array_elements(f.revisions::jsonb) v(value)
                   WHERE ($1::bigint IS NULL OR v.value::bigint >= $1::bigint)
                     AND ($2::bigint IS NULL OR v.value::bigint <= $2::bigint)))
               AND (NOT $8::boolean OR EXISTS (
                 SELECT 1 FROM jsonb_array_elements_text(f.keys::jsonb) j(value) LEFT JOIN keys k
                   ON k.cluster_id = f.cluster_id AND k.key = convert_to(j.value, 'UTF8')
                 WHERE ($3::text IS NULL OR k.namespace = $3::text) AND ($4::text IS NULL OR k.resource = $4::text)
                   AND ($5::text IS NULL OR starts_with(j.value, $5::text))
                   AND ($7::text IS NULL OR j.value = $7::text)))
               GROUP BY f.cluster_id, f.detector ORDER BY f.cluster_id, f.detector COLLATE "C""#,
            severities.join(", ")
        );
        let mut values = crate::store::sql::scope_cells(scope).to_vec();
        values.push(crate::store::tables::Cell::Int(by_key.into()));
        self.query(&sql, &super::cells::params(&values))?
            .iter()
            .map(|r| {
                Ok(FindingCount {
                    cluster: get(self, r, 0)?,
                    detector: get(self, r, 1)?,
                    count: get(self, r, 2)?,
                })
            })
            .collect()
    }
}

impl crate::store::recorder::FindingWrites for Store {
    fn findings_writer(
        &self,
        cluster: i64,
        detectors: &[&str],
    ) -> Result<Box<dyn FindingsWriter + '_>, StoreError> {
        self.begin()?;
        let mut writer = Writer {
            store: self,
            cluster,
            replaced: Replaced::default(),
            analyzed_at: crate::decode::gotime::now(),
            unsent: Vec::with_capacity(BATCH),
            open: true,
        };
        self.execute(
            "SELECT pg_advisory_xact_lock(hashtextextended('etcd_inspector.findings.' || $1::bigint, 0))",
            &[&cluster],
        )?;
        self.each_page(
            "SELECT id, detector, keys, revisions, severity, summary, details FROM findings \
             WHERE cluster_id = $1 AND detector = ANY($2) ORDER BY id",
            &[&cluster, &detectors],
            &mut |rows| {
                for r in rows {
                    let text = |i| get::<&str>(self, r, i);
                    writer.replaced.stored(StoredRow {
                        id: get(self, r, 0)?,
                        detector: text(1)?,
                        keys: text(2)?,
                        revisions: text(3)?,
                        severity: text(4)?,
                        summary: text(5)?,
                        details: text(6)?,
                    });
                }
                Ok(())
            },
        )?;
        Ok(Box::new(writer))
    }
}
