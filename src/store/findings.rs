//! Findings in the database, on either backend: written as `analyze` finds
//! them, replacing a cluster's earlier findings in one transaction, and
//! read back a page at a time, most severe first. What a finding is, and
//! when a stored one is the same, is [`super::finding`].

use super::audit::{written_by, WrittenBy, WRITTEN_BY_COLUMNS};
use super::cluster::{cluster_at, CLUSTER_COLUMNS};
use super::finding::{
    stored_json, Finding, FindingColumns, FindingCount, FindingIter, FindingQuery, FindingsWriter, Kept,
    Replaced, Severity, StoredFinding, StoredRow,
};
use super::paged::{PageSource, Paged};
use super::reader::FindingReads;
use super::recorder::FindingWrites;
use super::sql::{first_row, id_list, one_row, Cursor, Sql};
use super::tables::Cell;
use super::{ObjectFilter, Scope, StoreError};
use crate::source::Revision;
use crate::store::ClusterId;
use std::collections::{BTreeMap, HashMap, VecDeque};

/// Findings read per query.
const PAGE: i64 = 500;

/// Findings a writer holds before it inserts them.
const BATCH: usize = 1000;

/// The columns a finding is inserted with, in their declared order.
fn inserted() -> &'static [&'static str] {
    super::tables::columns("findings")
}

/// The [`FindingsWriter`]: one write transaction from start to commit,
/// holding the identities of the findings it replaces and at most
/// [`BATCH`] new findings, inserted a batch at a time so that the
/// connection is free for the analysis's own reads between puts.
struct Writer<'s, T: Sql + ?Sized> {
    db: &'s T,
    cluster: ClusterId,
    /// Stored findings of the detectors not put again yet.
    replaced: Replaced,
    analyzed_at: jiff::Timestamp,
    /// Rows of [`inserted`] columns not inserted yet.
    unsent: Vec<Cell>,
    open: bool,
}

impl<T: Sql + ?Sized> Writer<'_, T> {
    fn send(&mut self) -> Result<(), StoreError> {
        if !self.unsent.is_empty() {
            self.db.insert_rows("findings", inserted(), &self.unsent)?;
            self.unsent.clear();
        }
        Ok(())
    }
}

impl<T: Sql + ?Sized> FindingsWriter for Writer<'_, T> {
    fn put(&mut self, f: &Finding) -> Result<(), StoreError> {
        let columns = FindingColumns::of(f);
        match self.replaced.take(f, &columns) {
            Some(Kept::AsIs) => return Ok(()),
            Some(Kept::Rewritten(id)) => {
                self.db.execute(
                    "UPDATE findings SET severity = $2, summary = $3, details = $4 WHERE id = $1",
                    &[
                        Cell::Int(id),
                        Cell::Text(f.severity.as_str().to_string()),
                        Cell::Text(f.summary.clone()),
                        Cell::Text(columns.details),
                    ],
                )?;
                return Ok(());
            }
            None => {}
        }
        self.unsent.extend([
            Cell::from(self.cluster),
            Cell::Text(f.detector.to_string()),
            Cell::Text(f.severity.as_str().to_string()),
            Cell::Text(columns.keys),
            Cell::Text(columns.revisions),
            Cell::Text(f.summary.clone()),
            Cell::Text(columns.details),
            Cell::from(self.analyzed_at),
        ]);
        if self.unsent.len() >= BATCH * inserted().len() {
            self.send()?;
        }
        Ok(())
    }

    fn commit(mut self: Box<Self>) -> Result<(), StoreError> {
        self.send()?;
        for ids in self.replaced.left().chunks(10_000) {
            self.db.execute(
                &format!("DELETE FROM findings WHERE id IN {}", self.db.dialect().id_list),
                &[id_list(ids)],
            )?;
        }
        self.open = false;
        self.db.commit_transaction()
    }
}

impl<T: Sql + ?Sized> Drop for Writer<'_, T> {
    /// A writer that did not commit (the analysis failed) leaves the stored
    /// findings as they were.
    fn drop(&mut self) {
        if self.open {
            self.db.rollback_transaction();
        }
    }
}

impl<T: Sql + ?Sized> FindingWrites for T {
    fn findings_writer(
        &self,
        cluster: ClusterId,
        detectors: &[&str],
    ) -> Result<Box<dyn FindingsWriter + '_>, StoreError> {
        self.begin_transaction()?;
        let mut writer = Writer {
            db: self,
            cluster,
            replaced: Replaced::default(),
            analyzed_at: jiff::Timestamp::now(),
            unsent: Vec::with_capacity(BATCH * inserted().len()),
            open: true,
        };
        if let Some(lock) = self.dialect().findings_lock {
            self.execute(lock, &[Cell::from(cluster)])?;
        }
        self.each(
            "findings",
            "SELECT id, detector, keys, revisions, severity, summary, details FROM findings \
             WHERE cluster_id = $1 ORDER BY id",
            &[Cell::from(cluster)],
            &mut |row| {
                let mut c = Cursor::new(self, "findings", row);
                let id = c.int("id")?;
                let detector = c.text("detector")?;
                if detectors.contains(&detector.as_str()) {
                    writer.replaced.stored(StoredRow {
                        id,
                        detector: &detector,
                        keys: &c.text("keys")?,
                        revisions: &c.text("revisions")?,
                        severity: &c.text("severity")?,
                        summary: &c.text("summary")?,
                        details: &c.text("details")?,
                    });
                }
                Ok(())
            },
        )?;
        Ok(Box::new(writer))
    }
}

/// A page's findings, each with its cluster's row id.
type Found = Vec<(ClusterId, StoredFinding)>;

/// The pages of a [`FindingQuery`]: severity by severity, most severe
/// first, each in id order. The keys and writers a page's findings name are
/// looked up in one query per page, not one per finding.
struct Pages<'s, T: Sql + ?Sized> {
    db: &'s T,
    query: FindingQuery,
    /// Severities still to read, the next last.
    severities: Vec<Severity>,
    /// The id the next page starts after.
    after: i64,
    /// Whether every stored severity was checked to be one of ours (the
    /// pages ask for each known one, so another would go unread).
    checked: bool,
    /// Whether any revision has an attributed writer (once asked).
    attributed: Option<bool>,
}

/// Severities at least `min`, as a list of SQL strings.
fn severities_from(min: Option<Severity>) -> String {
    let names: Vec<String> = Severity::ALL
        .iter()
        .filter(|s| min.is_none_or(|min| **s >= min))
        .map(|s| format!("'{}'", s.as_str()))
        .collect();
    names.join(", ")
}

/// One stored finding from the row [`Pages::fill`] selects, with its
/// cluster's row id.
fn stored_finding(c: &mut Cursor) -> Result<(ClusterId, StoredFinding), StoreError> {
    let id = c.int("id")?;
    let detector = c.text("detector")?;
    let severity = c.parsed("severity", Severity::parse)?;
    let (keys, revisions) = (c.text("keys")?, c.text("revisions")?);
    let summary = c.text("summary")?;
    let details = c.text("details")?;
    let analyzed_at = c.time("analyzed_at")?;
    let cluster = cluster_at(c)?;
    let json = stored_json(&keys, &revisions, &details).map_err(|(column, e)| c.damage(column, e))?;
    let severity = severity.ok_or_else(|| c.damage("severity", "NULL is not a severity"))?;
    Ok((
        cluster.row,
        StoredFinding {
            id,
            cluster: cluster.label().to_string(),
            cluster_id: cluster.etcd_cluster_id,
            detector,
            severity,
            keys: json.keys,
            revisions: json.revisions,
            summary,
            details: json.details,
            analyzed_at,
            written_by: BTreeMap::new(),
        },
    ))
}

impl<T: Sql + ?Sized> Pages<'_, T> {
    /// Fails naming the first stored severity that is none of ours.
    fn check_severities(&self) -> Result<(), StoreError> {
        let other = first_row(
            self.db,
            "findings",
            &format!(
                "SELECT severity FROM findings WHERE severity NOT IN ({}) LIMIT 1",
                severities_from(None)
            ),
            &[],
            |c| c.text("severity"),
        )?;
        match other {
            Some(other) => {
                let e = Severity::parse(&other).expect_err("not a known severity");
                Err(self.db.typed("findings").damage("severity", e))
            }
            None => Ok(()),
        }
    }

    /// The clusters (row ids) and the JSON list of `keys`, the parameters
    /// of a query over keys [`key_rows`] spells.
    fn key_params(found: &Found, keys: impl Fn(&StoredFinding) -> &[String]) -> [Cell; 2] {
        let clusters: Vec<i64> = found.iter().map(|(cluster, _)| cluster.0).collect();
        let keys: Vec<&String> = found.iter().flat_map(|(_, f)| keys(f)).collect();
        [
            id_list(&clusters),
            Cell::Text(serde_json::to_string(&keys).expect("a list of strings is JSON")),
        ]
    }

    /// Keeps the findings of which a key is one the query's object filter
    /// keeps, by the namespace and resource it was stored with.
    fn keep_filtered(&self, found: &mut Found) -> Result<(), StoreError> {
        let mut names: HashMap<(ClusterId, String), (Option<String>, Option<String>)> = HashMap::new();
        self.db.each(
            "keys",
            &format!(
                "SELECT k.cluster_id, k.key, k.namespace, k.resource FROM keys k WHERE {}",
                key_rows(self.db)
            ),
            &Self::key_params(found, |f| &f.keys),
            &mut |row| {
                let mut c = Cursor::new(self.db, "keys", row);
                let at = (ClusterId(c.int("cluster_id")?), c.lossy("key")?);
                names.insert(at, (c.opt_text("namespace")?, c.opt_text("resource")?));
                Ok(())
            },
        )?;
        found.retain(|(cluster, f)| {
            f.keys.iter().any(|key| {
                let (namespace, resource) = names
                    .get(&(*cluster, key.clone()))
                    .map_or((None, None), |(n, r)| (n.as_deref(), r.as_deref()));
                self.query.objects.matches(key, namespace, resource)
            })
        });
        Ok(())
    }

    /// Who wrote the revisions of each finding's first key that it names.
    fn attach_writers(&self, found: &mut Found) -> Result<(), StoreError> {
        let revisions: Vec<Revision> = found.iter().flat_map(|(_, f)| f.revisions.clone()).collect();
        let [clusters, keys] = Self::key_params(found, |f| f.keys.get(..1).unwrap_or_default());
        let mut writers: HashMap<(ClusterId, String, Revision), WrittenBy> = HashMap::new();
        let items = self.db.dialect().json_items;
        self.db.each(
            "revision_writers",
            &format!(
                "SELECT k.cluster_id, k.key, w.mod_revision, {WRITTEN_BY_COLUMNS} FROM keys k \
                 JOIN revision_writers w ON w.key_id = k.id JOIN audit_requests a ON a.id = w.request_id \
                 WHERE {} AND w.mod_revision IN (SELECT CAST(v.value AS bigint) FROM {})",
                key_rows(self.db),
                items("$3", "v")
            ),
            &[
                clusters,
                keys,
                Cell::Text(serde_json::to_string(&revisions).expect("a list of numbers is JSON")),
            ],
            &mut |row| {
                let mut c = Cursor::new(self.db, "revision_writers", row);
                let at = (
                    ClusterId(c.int("keys.cluster_id")?),
                    c.lossy("keys.key")?,
                    c.revision("mod_revision")?,
                );
                if let Some(w) = written_by(&mut c)? {
                    writers.insert(at, w);
                }
                Ok(())
            },
        )?;
        for (cluster, f) in found.iter_mut() {
            let Some(key) = f.keys.first() else { continue };
            for revision in &f.revisions {
                if let Some(w) = writers.get(&(*cluster, key.clone(), *revision)) {
                    f.written_by.insert(*revision, w.clone());
                }
            }
        }
        Ok(())
    }
}

/// The rows of `keys k` of the clusters in `$1` (row ids) named in the
/// JSON list of keys `$2`.
fn key_rows(db: &(impl Sql + ?Sized)) -> String {
    let d = db.dialect();
    format!(
        "k.cluster_id IN {} AND k.key IN (SELECT {} FROM {})",
        d.id_list,
        (d.utf8)("j.value"),
        (d.json_items)("$2", "j")
    )
}

impl<T: Sql + ?Sized> PageSource for Pages<'_, T> {
    type Row = StoredFinding;

    /// Reads the next page of the current severity into `page`; none
    /// when every severity is read.
    fn fill(&mut self, page: &mut VecDeque<StoredFinding>) -> Result<(), StoreError> {
        // The cluster is chosen in the query; the rest key by key.
        let by_key = ObjectFilter {
            cluster: None,
            ..self.query.objects.clone()
        };
        let filtered = by_key != ObjectFilter::default();
        if !self.checked {
            self.check_severities()?;
            self.checked = true;
        }
        while page.is_empty() {
            let Some(&severity) = self.severities.last() else {
                return Ok(());
            };
            let mut found = Vec::new();
            self.db.each(
                "findings",
                &format!(
                    "SELECT f.id, f.detector, f.severity, f.keys, f.revisions, f.summary, f.details, \
                     f.analyzed_at, {CLUSTER_COLUMNS} FROM findings f JOIN clusters c ON c.id = f.cluster_id \
                     WHERE f.severity = $1 AND f.id > $2 AND (CAST($3 AS text) IS NULL OR f.detector = $3) \
                     AND (CAST($5 AS bigint) IS NULL OR f.cluster_id = $5) ORDER BY f.id LIMIT $4"
                ),
                &[
                    Cell::Text(severity.as_str().to_string()),
                    Cell::Int(self.after),
                    self.query.detector.clone().map_or(Cell::Null, Cell::Text),
                    Cell::Int(PAGE),
                    self.query.objects.cluster.map_or(Cell::Null, Cell::from),
                ],
                &mut |row| {
                    found.push(stored_finding(&mut Cursor::new(self.db, "findings", row))?);
                    Ok(())
                },
            )?;
            let read = found.len() as i64;
            if let Some((_, last)) = found.last() {
                self.after = last.id;
            }
            if filtered && !found.is_empty() {
                self.keep_filtered(&mut found)?;
            }
            if !found.is_empty() && *self.attributed.get_or_insert(any_writers(self.db)?) {
                self.attach_writers(&mut found)?;
            }
            page.extend(found.into_iter().map(|(_, f)| f));
            if read < PAGE {
                self.severities.pop();
                self.after = 0;
            }
        }
        Ok(())
    }
}

/// Whether `attribute` attributed any revision.
fn any_writers(db: &(impl Sql + ?Sized)) -> Result<bool, StoreError> {
    one_row(
        db,
        "revision_writers",
        "SELECT CASE WHEN EXISTS (SELECT 1 FROM revision_writers) THEN 1 ELSE 0 END",
        &[],
        |c| c.flag("exists"),
    )
}

impl<T: Sql + ?Sized> FindingReads for T {
    fn findings(&self, query: &FindingQuery) -> FindingIter<'_> {
        let severities = Severity::ALL
            .into_iter()
            .filter(|s| query.severity.is_none_or(|min| *s >= min))
            .collect();
        Box::new(Paged::new(Pages {
            db: self,
            query: query.clone(),
            severities,
            after: 0,
            checked: false,
            attributed: None,
        }))
    }

    fn finding_counts(
        &self,
        scope: &Scope,
        severity: Option<Severity>,
    ) -> Result<Vec<FindingCount>, StoreError> {
        let o = &scope.objects;
        let by_key =
            o.namespace.is_some() || o.resource.is_some() || o.key_prefix.is_some() || o.key.is_some();
        let d = self.dialect();
        let revisions = (d.json_items)("f.revisions", "v");
        let sql = format!(
            "SELECT f.cluster_id, f.detector, count(*) FROM findings f \
             WHERE f.severity IN ({}) AND (CAST($6 AS bigint) IS NULL OR f.cluster_id = $6) \
             AND ((CAST($1 AS bigint) IS NULL AND CAST($2 AS bigint) IS NULL) \
               OR NOT EXISTS (SELECT 1 FROM {revisions}) OR EXISTS (SELECT 1 FROM {revisions} \
               WHERE (CAST($1 AS bigint) IS NULL OR CAST(v.value AS bigint) >= $1) \
                 AND (CAST($2 AS bigint) IS NULL OR CAST(v.value AS bigint) <= $2))) \
             AND ($8 = 0 OR EXISTS ( \
               SELECT 1 FROM {} LEFT JOIN keys k ON k.cluster_id = f.cluster_id AND k.key = {} \
               WHERE (CAST($3 AS text) IS NULL OR k.namespace = $3) AND (CAST($4 AS text) IS NULL OR k.resource = $4) \
                 AND (CAST($5 AS text) IS NULL OR substr(j.value, 1, length($5)) = $5) \
                 AND (CAST($7 AS text) IS NULL OR j.value = $7))) \
             GROUP BY f.cluster_id, f.detector ORDER BY f.cluster_id, f.detector{}",
            severities_from(severity),
            (d.json_items)("f.keys", "j"),
            (d.utf8)("j.value"),
            d.byte_order
        );
        let mut params = super::sql::scope_cells(scope).to_vec();
        params.push(Cell::Int(by_key.into()));
        let mut counts = Vec::new();
        self.each("findings", &sql, &params, &mut |row| {
            let mut c = Cursor::new(self, "findings", row);
            counts.push(FindingCount {
                cluster: ClusterId(c.int("cluster_id")?),
                detector: c.text("detector")?,
                count: c.int("count")?,
            });
            Ok(())
        })?;
        Ok(counts)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::source::Sink;
    use crate::store::recorder::ClusterWrites;
    use crate::store::sqlite::Store;

    /// A database with two ConfigMaps, in namespaces `a` and `b`; the
    /// cluster's row id.
    fn database(dir: &tempfile::TempDir) -> (Store, ClusterId) {
        let store = Store::open_for_writing(&dir.path().join("db.sqlite")).unwrap();
        let (cluster, run, fields) = crate::store::sqlite::test_run(&store);
        let mut w = crate::lifecycle::RevisionWriter::unfiltered(&store, cluster, run, fields).unwrap();
        for (revision, ns) in [(2, "a"), (3, "b")] {
            let object = serde_json::json!({"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": "c", "namespace": ns, "uid": ns}});
            let key = format!("/registry/configmaps/{ns}/c");
            w.record(crate::store::sqlite::test_record(
                &key, revision, revision, &object,
            ))
            .unwrap();
        }
        w.flush().unwrap();
        drop(w);
        (store, cluster)
    }

    fn finding(detector: &'static str, severity: Severity, n: i64) -> Finding {
        let ns = if n % 2 == 0 { "a" } else { "b" };
        Finding {
            detector,
            severity,
            keys: vec![format!("/registry/configmaps/{ns}/c")],
            revisions: vec![Revision(n)],
            summary: format!("finding {n}"),
            details: serde_json::json!({"n": n}),
        }
    }

    fn replace(store: &Store, cluster: ClusterId, findings: &[Finding]) {
        let mut w = store.findings_writer(cluster, &["one", "two"]).unwrap();
        for f in findings {
            w.put(f).unwrap();
        }
        w.commit().unwrap();
    }

    fn read(store: &Store, query: &FindingQuery) -> Vec<StoredFinding> {
        store.findings(query).collect::<Result<_, _>>().unwrap()
    }

    #[test]
    fn pages_come_most_severe_first_then_in_order_and_filtered() {
        let dir = tempfile::tempdir().unwrap();
        let (store, cluster) = database(&dir);
        // More than a page of each severity, interleaved as a detector
        // emits them.
        let mut all = Vec::new();
        for n in 0..(3 * PAGE) {
            let severity = [Severity::Low, Severity::High, Severity::Medium][n as usize % 3];
            all.push(finding(if n % 5 == 0 { "two" } else { "one" }, severity, n));
        }
        replace(&store, cluster, &all);
        let found = read(&store, &FindingQuery::default());
        assert_eq!(found.len(), all.len());
        let order: Vec<(Severity, i64)> = found.iter().map(|f| (f.severity, f.id)).collect();
        let mut sorted = order.clone();
        sorted.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
        assert_eq!(order, sorted);

        let two = read(
            &store,
            &FindingQuery {
                detector: Some("two".into()),
                ..Default::default()
            },
        );
        assert_eq!(two.len(), all.iter().filter(|f| f.detector == "two").count());
        let serious = read(
            &store,
            &FindingQuery {
                severity: Some(Severity::Medium),
                ..Default::default()
            },
        );
        assert_eq!(
            serious.len(),
            all.iter().filter(|f| f.severity >= Severity::Medium).count()
        );
        let in_b = read(
            &store,
            &FindingQuery {
                objects: ObjectFilter {
                    namespace: Some("b".into()),
                    ..Default::default()
                },
                ..Default::default()
            },
        );
        assert_eq!(in_b.len(), all.len() / 2);
        assert!(in_b.iter().all(|f| f.keys[0] == "/registry/configmaps/b/c"));
    }

    #[test]
    fn replacing_keeps_unchanged_ids_and_a_dropped_writer_changes_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let (store, cluster) = database(&dir);
        let (a, b, c) = (
            finding("one", Severity::Low, 1),
            finding("one", Severity::Low, 2),
            finding("two", Severity::High, 3),
        );
        replace(&store, cluster, &[a.clone(), b.clone()]);
        let before = read(&store, &FindingQuery::default());
        replace(&store, cluster, &[b.clone(), c.clone()]);
        let after = read(&store, &FindingQuery::default());
        let summaries: Vec<&str> = after.iter().map(|f| f.summary.as_str()).collect();
        assert_eq!(summaries, ["finding 3", "finding 2"]);
        let id_of = |fs: &[StoredFinding], s: &str| fs.iter().find(|f| f.summary == s).map(|f| f.id);
        assert_eq!(id_of(&after, "finding 2"), id_of(&before, "finding 2"));

        let mut w = store.findings_writer(cluster, &["one", "two"]).unwrap();
        w.put(&a).unwrap();
        drop(w);
        let ids = |fs: &[StoredFinding]| fs.iter().map(|f| f.id).collect::<Vec<_>>();
        assert_eq!(ids(&read(&store, &FindingQuery::default())), ids(&after));
    }

    /// The counts a fleet report's table shows are those of the findings
    /// read and kept as a report keeps them, whatever the range, objects,
    /// severity and cluster.
    #[test]
    fn counts_are_the_findings_a_report_reads() {
        use crate::store::Scope;
        let dir = tempfile::tempdir().unwrap();
        let (store, cluster) = database(&dir);
        let mut all: Vec<Finding> = (0..40)
            .map(|n| {
                let severity = [Severity::Low, Severity::High][n as usize % 2];
                finding(if n % 3 == 0 { "two" } else { "one" }, severity, n)
            })
            .collect();
        all.push(Finding {
            revisions: vec![],
            ..finding("one", Severity::Low, 100)
        });
        all.push(Finding {
            keys: vec!["/registry/configmaps/a/never-stored".into()],
            ..finding("two", Severity::High, 101)
        });
        replace(&store, cluster, &all);
        let (other, _) = store.cluster("other", None).unwrap();
        let mut w = store.findings_writer(other, &["one"]).unwrap();
        w.put(&finding("one", Severity::High, 7)).unwrap();
        w.commit().unwrap();

        let some = |s: &str| Some(s.to_string());
        let cases = [
            (None, None, None, None, None, None),
            (Some(cluster), None, None, None, None, None),
            (Some(other), None, None, None, None, None),
            (Some(cluster), Some(10), Some(20), None, None, None),
            (None, Some(30), None, some("b"), None, Some(Severity::High)),
            (
                Some(cluster),
                None,
                Some(5),
                None,
                some("/registry/configmaps/a/"),
                None,
            ),
            (None, None, None, None, some("/registry/configmaps/a/never"), None),
        ];
        for (wanted, from, to, namespace, key_prefix, severity) in cases {
            let scope = Scope {
                from_revision: from.map(Revision),
                to_revision: to.map(Revision),
                objects: ObjectFilter {
                    cluster: wanted,
                    namespace,
                    resource: None,
                    // With that prefix, the one key under it (never
                    // stored): the same findings.
                    key: key_prefix
                        .as_ref()
                        .filter(|p| p.ends_with("/never"))
                        .map(|p| format!("{p}-stored")),
                    key_prefix,
                },
            };
            let mut expected: std::collections::BTreeMap<(ClusterId, String), i64> = Default::default();
            let query = FindingQuery {
                objects: scope.objects.clone(),
                detector: None,
                severity,
            };
            for f in read(&store, &query) {
                let in_range = |r: &Revision| {
                    from.is_none_or(|f| *r >= Revision(f)) && to.is_none_or(|t| *r <= Revision(t))
                };
                if f.revisions.is_empty() || f.revisions.iter().any(in_range) {
                    let row = if f.cluster_id == "other" { other } else { cluster };
                    *expected.entry((row, f.detector)).or_default() += 1;
                }
            }
            let counted: std::collections::BTreeMap<(ClusterId, String), i64> = store
                .finding_counts(&scope, severity)
                .unwrap()
                .into_iter()
                .map(|c| ((c.cluster, c.detector), c.count))
                .collect();
            assert!(!expected.is_empty(), "{scope:?}");
            assert_eq!(counted, expected, "{scope:?} {severity:?}");
        }
    }
}
