//! Findings in the SQLite database: written as `analyze` finds them,
//! replacing a cluster's earlier findings in one transaction, and read back
//! a page at a time, most severe first.

use super::Store;
use crate::store::audit::{written_by, WrittenBy, WRITTEN_BY_COLUMNS};
use crate::store::finding::{
    stored_json, Finding, FindingColumns, FindingCount, FindingIter, FindingQuery, FindingsWriter, Kept,
    Replaced, Severity, StoredFinding, StoredRow,
};
use crate::store::paged::{PageSource, Paged};
use crate::store::sql::{Cursor, Sql};
use crate::store::tables::Cell;
use crate::store::StoreError;
use rusqlite::{params, OptionalExtension};
use std::collections::VecDeque;

/// Findings read per query.
const PAGE: i64 = 500;

/// The SQLite [`FindingsWriter`]: one write transaction from start to
/// commit; the identities of the findings it replaces are all it holds.
struct Writer<'s> {
    store: &'s Store,
    cluster: i64,
    /// Stored findings of the detectors not put again yet.
    replaced: Replaced,
    analyzed_at: String,
    open: bool,
}

impl FindingsWriter for Writer<'_> {
    fn put(&mut self, f: &Finding) -> Result<(), StoreError> {
        let columns = FindingColumns::of(f);
        match self.replaced.take(f, &columns) {
            Some(Kept::AsIs) => return Ok(()),
            Some(Kept::Rewritten(id)) => {
                self.store
                    .conn
                    .prepare_cached(
                        "UPDATE findings SET severity = ?2, summary = ?3, details = ?4 WHERE id = ?1",
                    )
                    .and_then(|mut s| s.execute(params![id, f.severity.as_str(), f.summary, columns.details]))
                    .map_err(|e| self.store.err(e))?;
                return Ok(());
            }
            None => {}
        }
        self.store
            .conn
            .prepare_cached(
                "INSERT INTO findings (cluster_id, detector, severity, keys, revisions, summary, details, analyzed_at) \
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
            )
            .and_then(|mut s| {
                s.execute(params![
                    self.cluster,
                    f.detector,
                    f.severity.as_str(),
                    columns.keys,
                    columns.revisions,
                    f.summary,
                    columns.details,
                    self.analyzed_at
                ])
            })
            .map_err(|e| self.store.err(e))?;
        Ok(())
    }

    fn commit(mut self: Box<Self>) -> Result<(), StoreError> {
        let err = |e| self.store.err(e);
        {
            let mut delete = self
                .store
                .conn
                .prepare_cached("DELETE FROM findings WHERE id = ?1")
                .map_err(err)?;
            for id in self.replaced.left() {
                delete.execute([id]).map_err(err)?;
            }
        }
        self.store.conn.execute_batch("COMMIT").map_err(err)?;
        self.open = false;
        Ok(())
    }
}

impl Drop for Writer<'_> {
    /// A writer that did not commit (the analysis failed) leaves the stored
    /// findings as they were.
    fn drop(&mut self) {
        if self.open {
            let _ = self.store.conn.execute_batch("ROLLBACK");
        }
    }
}

/// The pages of a [`FindingQuery`]: severity by severity, most severe
/// first, each in id order.
struct Pages<'s> {
    store: &'s Store,
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

impl Store {
    /// Whether `attribute` attributed any revision.
    fn any_writers(&self) -> Result<bool, StoreError> {
        self.conn
            .query_row("SELECT EXISTS (SELECT 1 FROM revision_writers)", [], |r| r.get(0))
            .map_err(|e| self.err(e))
    }

    /// Who wrote the revisions of a finding's first key that it names.
    fn finding_writers(
        &self,
        cluster: i64,
        f: &StoredFinding,
    ) -> Result<std::collections::BTreeMap<i64, WrittenBy>, StoreError> {
        let mut out = std::collections::BTreeMap::new();
        let Some(key) = f.keys.first() else {
            return Ok(out);
        };
        let sql = format!(
            "SELECT {WRITTEN_BY_COLUMNS} FROM keys k JOIN revision_writers w ON w.key_id = k.id \
             JOIN audit_requests a ON a.id = w.request_id \
             WHERE k.cluster_id = $1 AND k.key = CAST($2 AS BLOB) AND w.mod_revision = $3"
        );
        for revision in &f.revisions {
            let params = [Cell::Int(cluster), Cell::Text(key.clone()), Cell::Int(*revision)];
            self.each("revision_writers", &sql, &params, &mut |row| {
                if let Some(w) = written_by(&mut Cursor::new(self, "revision_writers", row))? {
                    out.insert(*revision, w);
                }
                Ok(())
            })?;
        }
        Ok(out)
    }

    /// The cluster in columns `at`.. of a row, as
    /// [`crate::store::cluster::cluster_at`] reads it.
    fn cluster_in(&self, r: &rusqlite::Row, at: usize) -> Result<crate::store::cluster::Cluster, StoreError> {
        let cells = (at..at + 3)
            .map(|i| {
                super::cells::cell(
                    &self.path,
                    "clusters",
                    "?",
                    r.get_ref(i).map_err(|e| self.err(e))?,
                )
            })
            .collect::<Result<Vec<_>, _>>()?;
        crate::store::cluster::cluster_at(&mut Cursor::new(self, "clusters", &cells))
    }

    /// One stored finding from its row (`id, etcd cluster id, detector,
    /// severity, keys, revisions, summary, details, analyzed_at`, then the
    /// cluster's [`crate::store::cluster::CLUSTER_COLUMNS`]).
    fn finding_row(&self, r: &rusqlite::Row) -> Result<StoredFinding, StoreError> {
        let err = |e| self.err(e);
        let text = |i: usize| -> Result<String, StoreError> { r.get(i).map_err(err) };
        let severity = text(3)?;
        let json =
            stored_json(&text(4)?, &text(5)?, &text(7)?).map_err(|(column, e)| self.damaged(column, e))?;
        Ok(StoredFinding {
            id: r.get(0).map_err(err)?,
            cluster: self.cluster_in(r, 9)?.label().to_string(),
            cluster_id: text(1)?,
            detector: text(2)?,
            severity: Severity::parse(&severity).map_err(|e| self.damaged("findings.severity", e))?,
            keys: json.keys,
            revisions: json.revisions,
            summary: text(6)?,
            details: json.details,
            analyzed_at: text(8)?,
            written_by: Default::default(),
        })
    }

    /// Whether a key of the cluster (by row id) is kept by the filter, by
    /// the namespace and resource it was stored with.
    fn finding_key_kept(&self, query: &FindingQuery, cluster: i64, key: &str) -> Result<bool, StoreError> {
        let names: Option<(Option<String>, Option<String>)> = self
            .conn
            .prepare_cached(
                "SELECT namespace, resource FROM keys WHERE cluster_id = ?1 AND key = CAST(?2 AS BLOB)",
            )
            .and_then(|mut s| {
                s.query_row(params![cluster, key], |r| Ok((r.get(0)?, r.get(1)?)))
                    .optional()
            })
            .map_err(|e| self.err(e))?;
        let (namespace, resource) = names.unwrap_or_default();
        Ok(query
            .objects
            .matches(key, namespace.as_deref(), resource.as_deref()))
    }
}

impl PageSource for Pages<'_> {
    type Row = StoredFinding;

    /// Reads the next page of the current severity into `page`; none
    /// when every severity is read.
    fn fill(&mut self, page: &mut VecDeque<StoredFinding>) -> Result<(), StoreError> {
        let store = self.store;
        let err = |e| store.err(e);
        // The cluster is chosen in the query; the rest key by key.
        let by_key = crate::store::ObjectFilter {
            cluster: None,
            ..self.query.objects.clone()
        };
        let filtered = by_key != crate::store::ObjectFilter::default();
        if !self.checked {
            let known: Vec<String> = Severity::ALL
                .iter()
                .map(|s| format!("'{}'", s.as_str()))
                .collect();
            let other: Option<String> = store
                .conn
                .query_row(
                    &format!(
                        "SELECT severity FROM findings WHERE severity NOT IN ({}) LIMIT 1",
                        known.join(", ")
                    ),
                    [],
                    |r| r.get(0),
                )
                .optional()
                .map_err(err)?;
            if let Some(other) = other {
                let e = Severity::parse(&other).expect_err("not a known severity");
                return Err(store.damaged("findings.severity", e));
            }
            self.checked = true;
        }
        while page.is_empty() {
            let Some(&severity) = self.severities.last() else {
                return Ok(());
            };
            let mut stmt = store
                .conn
                .prepare_cached(&format!(
                    "SELECT f.id, c.etcd_cluster_id, f.detector, f.severity, f.keys, f.revisions, f.summary, f.details, \
                     f.analyzed_at, {} FROM findings f JOIN clusters c ON c.id = f.cluster_id \
                     WHERE f.severity = ?1 AND f.id > ?2 AND (?3 IS NULL OR f.detector = ?3) \
                     AND (?5 IS NULL OR f.cluster_id = ?5) ORDER BY f.id LIMIT ?4",
                    crate::store::cluster::CLUSTER_COLUMNS
                ))
                .map_err(err)?;
            let mut rows = stmt
                .query(params![
                    severity.as_str(),
                    self.after,
                    self.query.detector,
                    PAGE,
                    self.query.objects.cluster
                ])
                .map_err(err)?;
            let mut read = 0;
            while let Some(r) = rows.next().map_err(err)? {
                read += 1;
                let finding = store.finding_row(r)?;
                self.after = finding.id;
                let cluster: i64 = r.get(9).map_err(err)?;
                let mut kept = !filtered;
                for key in &finding.keys {
                    if kept {
                        break;
                    }
                    kept = store.finding_key_kept(&self.query, cluster, key)?;
                }
                if kept {
                    let mut finding = finding;
                    if *self.attributed.get_or_insert(store.any_writers()?) {
                        finding.written_by = store.finding_writers(cluster, &finding)?;
                    }
                    page.push_back(finding);
                }
            }
            if read < PAGE {
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
            checked: false,
            attributed: None,
        }))
    }

    fn finding_counts(
        &self,
        scope: &crate::store::Scope,
        severity: Option<Severity>,
    ) -> Result<Vec<FindingCount>, StoreError> {
        let err = |e| self.err(e);
        let severities: Vec<String> = Severity::ALL
            .iter()
            .filter(|s| severity.is_none_or(|min| **s >= min))
            .map(|s| format!("'{}'", s.as_str()))
            .collect();
        let o = &scope.objects;
        let by_key =
            o.namespace.is_some() || o.resource.is_some() || o.key_prefix.is_some() || o.key.is_some();
        let sql = format!(
            "SELECT f.cluster_id, f.detector, count(*) FROM findings f \
             WHERE f.severity IN ({}) AND (?6 IS NULL OR f.cluster_id = ?6) \
             AND ((?1 IS NULL AND ?2 IS NULL) OR json_array_length(f.revisions) = 0 OR EXISTS ( \
               SELECT 1 FROM json_each(f.revisions) v \
               WHERE (?1 IS NULL OR v.value >= ?1) AND (?2 IS NULL OR v.value <= ?2))) \
             AND (?8 = 0 OR EXISTS ( \
               SELECT 1 FROM json_each(f.keys) j LEFT JOIN keys k ON k.cluster_id = f.cluster_id \
                 AND k.key = CAST(j.value AS BLOB) \
               WHERE (?3 IS NULL OR k.namespace = ?3) AND (?4 IS NULL OR k.resource = ?4) \
                 AND (?5 IS NULL OR substr(j.value, 1, length(?5)) = ?5) \
                 AND (?7 IS NULL OR j.value = ?7))) \
             GROUP BY f.cluster_id, f.detector ORDER BY f.cluster_id, f.detector",
            severities.join(", ")
        );
        let mut stmt = self.conn.prepare(&sql).map_err(err)?;
        let by_key = i64::from(by_key);
        let rows = stmt
            .query_map(
                rusqlite::params_from_iter(
                    crate::store::sql::scope_cells(scope)
                        .iter()
                        .map(super::cells::to_value)
                        .chain([rusqlite::types::Value::Integer(by_key)]),
                ),
                |r| {
                    Ok(FindingCount {
                        cluster: r.get(0)?,
                        detector: r.get(1)?,
                        count: r.get(2)?,
                    })
                },
            )
            .map_err(err)?;
        rows.collect::<Result<_, _>>().map_err(err)
    }
}

impl crate::store::recorder::FindingWrites for Store {
    fn findings_writer(
        &self,
        cluster: i64,
        detectors: &[&str],
    ) -> Result<Box<dyn FindingsWriter + '_>, StoreError> {
        let err = |e| self.err(e);
        self.conn.execute_batch("BEGIN IMMEDIATE").map_err(err)?;
        let mut writer = Writer {
            store: self,
            cluster,
            replaced: Replaced::default(),
            analyzed_at: crate::decode::gotime::now(),
            open: true,
        };
        let mut stmt = self
            .conn
            .prepare(
                "SELECT id, detector, keys, revisions, severity, summary, details FROM findings \
                 WHERE cluster_id = ?1 ORDER BY id",
            )
            .map_err(err)?;
        let mut rows = stmt.query([cluster]).map_err(err)?;
        while let Some(r) = rows.next().map_err(err)? {
            let text = |i| r.get_ref(i).and_then(|v| Ok(v.as_str()?)).map_err(err);
            let detector = text(1)?;
            if detectors.contains(&detector) {
                writer.replaced.stored(StoredRow {
                    id: r.get(0).map_err(err)?,
                    detector,
                    keys: text(2)?,
                    revisions: text(3)?,
                    severity: text(4)?,
                    summary: text(5)?,
                    details: text(6)?,
                });
            }
        }
        drop(rows);
        drop(stmt);
        Ok(Box::new(writer))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::source::Sink;
    use crate::store::reader::FindingReads;
    use crate::store::recorder::ClusterWrites;
    use crate::store::recorder::FindingWrites;
    use crate::store::ObjectFilter;

    /// A database with two ConfigMaps, in namespaces `a` and `b`; the
    /// cluster's row id.
    fn database(dir: &tempfile::TempDir) -> (Store, i64) {
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
            revisions: vec![n],
            summary: format!("finding {n}"),
            details: serde_json::json!({"n": n}),
        }
    }

    fn replace(store: &Store, cluster: i64, findings: &[Finding]) {
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
                from_revision: from,
                to_revision: to,
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
            let mut expected: std::collections::BTreeMap<(i64, String), i64> = Default::default();
            let query = FindingQuery {
                objects: scope.objects.clone(),
                detector: None,
                severity,
            };
            for f in read(&store, &query) {
                let in_range = |r: &i64| from.is_none_or(|f| *r >= f) && to.is_none_or(|t| *r <= t);
                if f.revisions.is_empty() || f.revisions.iter().any(in_range) {
                    let row = if f.cluster_id == "other" { other } else { cluster };
                    *expected.entry((row, f.detector)).or_default() += 1;
                }
            }
            let counted: std::collections::BTreeMap<(i64, String), i64> = store
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
