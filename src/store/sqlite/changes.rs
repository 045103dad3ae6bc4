//! Change classes and findings in the database: the classification pass,
//! the classified history detectors read, and the findings they write.

use super::Store;
use crate::canon::change::{ChangeCause, ChangeClass, Facts};
use crate::canon::facts::ObjectFacts;
use crate::canon::path::FieldPath;
use crate::canon::semantic::FIELD_HASH_LEN;
use crate::decode::envelope::Encoding;
use crate::decrypt::label::Label;
use crate::ingest::blob::Packed;
use crate::ingest::revision::TEXT_ENCODING;
use crate::store::classify::{classify_history, Revision};
use crate::store::field_blob::PathNames;
use crate::store::object::ObjectRevision;
use crate::store::ClassifyStats;
use crate::store::StoreError;
use crate::unknown::UnknownName;
use rusqlite::params;
use std::collections::BTreeMap;

/// Decodes a `semantic_values.fields` column (column `index` of its row);
/// `None` when the value has none. A blob that does not decompress or parse
/// is an error naming the damage.
pub(in crate::store) fn decode_fields(
    packed: &Packed,
    paths: &PathNames,
    index: usize,
) -> rusqlite::Result<Option<BTreeMap<FieldPath, [u8; FIELD_HASH_LEN]>>> {
    let damaged = |e: Box<dyn std::error::Error + Send + Sync>| {
        rusqlite::Error::FromSqlConversionFailure(index, rusqlite::types::Type::Blob, e)
    };
    let Some(blob) = packed.field_bytes() else {
        return Ok(None);
    };
    let blob = blob.map_err(|e| damaged(Box::new(e)))?;
    crate::store::field_blob::decode(&blob, paths)
        .map(Some)
        .map_err(|e| damaged(Box::new(e)))
}

impl Store {
    /// Interned field paths by id.
    pub(in crate::store) fn field_path_names(&self) -> Result<PathNames, StoreError> {
        let err = |e| self.err(e);
        let mut stmt = self
            .conn
            .prepare("SELECT id, path FROM field_paths")
            .map_err(err)?;
        let rows = stmt
            .query_map([], |r| Ok((r.get::<_, i64>(0)?, r.get::<_, String>(1)?)))
            .map_err(err)?;
        let mut out = Vec::new();
        for row in rows {
            let (id, text) = row.map_err(err)?;
            let path = FieldPath::parse(&text).map_err(|e| self.damaged("field_paths.path", e))?;
            out.push((id, path));
        }
        Ok(PathNames::new(out))
    }
}

/// What `key_histories` selects, as (expression, name): rows are read
/// by position ([`col!`]), since looking a column up by name compares it
/// with every column name, on every row.
const HISTORY_COLUMNS: &[(&str, &str)] = &[
    ("k.key", "key"),
    ("k.resource", "resource"),
    ("k.api_group", "api_group"),
    ("r.mod_revision", "mod_revision"),
    ("r.create_revision", "create_revision"),
    ("r.version", "version"),
    ("r.deleted", "deleted"),
    ("r.kind", "kind"),
    ("coalesce(r.namespace, k.namespace)", "namespace"),
    ("coalesce(r.name, k.name)", "name"),
    ("r.uid", "uid"),
    ("r.owner_kind", "owner_kind"),
    ("r.owner_name", "owner_name"),
    ("r.owner_uid", "owner_uid"),
    ("r.generate_name", "generate_name"),
    ("r.spec_hash", "spec_hash"),
    ("r.creation_timestamp", "creation_timestamp"),
    ("r.deletion_timestamp", "deletion_timestamp"),
    ("r.phase", "phase"),
    ("r.node", "node"),
    ("r.desired", "desired"),
    ("r.managers", "managers"),
    ("r.duplicates", "duplicates"),
    ("r.semantic_sha256", "semantic_sha256"),
    ("r.generation", "generation"),
    ("r.observed_generation", "observed_generation"),
    ("r.encoding", "encoding"),
    ("r.api_version", "api_version"),
    ("r.encryption", "encryption"),
    ("r.change_class", "change_class"),
    ("r.change_cause", "change_cause"),
    ("r.changed_paths", "changed_paths"),
    ("r.changed_by", "changed_by"),
    ("r.finalizers", "finalizers"),
    ("r.owner_refs", "owner_refs"),
    ("r.written_at", "written_at"),
    ("r.event_time", "event_time"),
    ("r.foreign_evidence", "foreign_evidence"),
    // The content's codec, fields and its base's fields, in this order.
    ("s.codec", "codec"),
    ("s.fields", "fields"),
    ("b.fields", "base_fields"),
];

/// Where `name` is among [`HISTORY_COLUMNS`].
const fn history_column(name: &str) -> usize {
    let mut i = 0;
    while i < HISTORY_COLUMNS.len() {
        let (a, b) = (HISTORY_COLUMNS[i].1.as_bytes(), name.as_bytes());
        if a.len() == b.len() {
            let mut j = 0;
            while j < a.len() && a[j] == b[j] {
                j += 1;
            }
            if j == a.len() {
                return i;
            }
        }
        i += 1;
    }
    panic!("not a column key_histories selects")
}

/// The position of a column of [`HISTORY_COLUMNS`], found at compile time.
macro_rules! col {
    ($name:literal) => {
        const { history_column($name) }
    };
}

impl Store {
    /// A stored change class or cause as its type: a name the type does not
    /// have means the database is damaged, not that the value is absent.
    fn named<T>(
        &self,
        stored: Option<String>,
        column: &str,
        parse: fn(&str) -> Result<T, UnknownName>,
    ) -> Result<Option<T>, StoreError> {
        stored
            .map(|name| parse(&name).map_err(|e| self.damaged(column, e)))
            .transpose()
    }

    /// Fails unless `encoding` (a `revisions.encoding`) is one the decoder
    /// names, or the plain text of etcd's compaction key.
    pub(in crate::store) fn check_encoding(&self, encoding: Option<&str>) -> Result<(), StoreError> {
        match encoding {
            None | Some(TEXT_ENCODING) => Ok(()),
            Some(name) => Encoding::parse(name)
                .map(|_| ())
                .map_err(|e| self.damaged("revisions.encoding", e)),
        }
    }

    /// Fails unless `label` (a `revisions.encryption`) reads as an
    /// encryption label.
    pub(in crate::store) fn check_encryption(&self, label: Option<&str>) -> Result<(), StoreError> {
        match label {
            None => Ok(()),
            Some(text) => Label::parse(text)
                .map(|_| ())
                .map_err(|e| self.damaged("revisions.encryption", e)),
        }
    }
}

impl crate::store::reader::ChangeReads for Store {
    fn gaps(&self, cluster: i64) -> Result<Vec<crate::store::Gap>, StoreError> {
        let err = |e| self.err(e);
        let mut stmt = self
            .conn
            .prepare("SELECT from_revision, to_revision FROM history_gaps WHERE cluster_id = ?1 ORDER BY from_revision")
            .map_err(err)?;
        let rows = stmt
            .query_map([cluster], |r| {
                Ok(crate::store::Gap {
                    from_revision: r.get(0)?,
                    to_revision: r.get(1)?,
                })
            })
            .map_err(err)?;
        rows.collect::<Result<_, _>>().map_err(err)
    }

    fn key_histories(
        &self,
        cluster: i64,
        visit: &mut dyn FnMut(&[ObjectRevision]),
    ) -> Result<(), StoreError> {
        let err = |e| self.err(e);
        let paths = self.field_path_names()?;
        let mut stmt = self
            .conn
            .prepare(&format!(
                "SELECT {} FROM revisions r JOIN keys k ON k.id = r.key_id \
                     LEFT JOIN semantic_values s ON s.hash = r.semantic_sha256 \
                     LEFT JOIN semantic_values b ON b.id = s.base \
                     WHERE k.cluster_id = ?1 ORDER BY k.key, r.mod_revision",
                HISTORY_COLUMNS
                    .iter()
                    .map(|(expr, name)| format!("{expr} AS {name}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ))
            .map_err(err)?;
        // The content's codec, fields and its base's fields, read together.
        const FIELDS: usize = col!("codec");
        let mut rows = stmt.query([cluster]).map_err(err)?;
        let mut current: Vec<ObjectRevision> = Vec::new();
        while let Some(r) = rows.next().map_err(err)? {
            let key: Vec<u8> = r.get(col!("key")).map_err(err)?;
            let text = |at: usize| -> Result<Option<String>, StoreError> { r.get(at).map_err(err) };
            let fields = super::packed(r, FIELDS).map_err(err)?;
            let rev = ObjectRevision {
                key: String::from_utf8_lossy(&key).into_owned(),
                resource: r.get(col!("resource")).map_err(err)?,
                group: r.get(col!("api_group")).map_err(err)?,
                mod_revision: r.get(col!("mod_revision")).map_err(err)?,
                create_revision: r.get(col!("create_revision")).map_err(err)?,
                version: r.get(col!("version")).map_err(err)?,
                deleted: r.get(col!("deleted")).map_err(err)?,
                kind: r.get(col!("kind")).map_err(err)?,
                namespace: r.get(col!("namespace")).map_err(err)?,
                name: r.get(col!("name")).map_err(err)?,
                uid: r.get(col!("uid")).map_err(err)?,
                facts: ObjectFacts {
                    owner_kind: r.get(col!("owner_kind")).map_err(err)?,
                    owner_name: r.get(col!("owner_name")).map_err(err)?,
                    owner_uid: r.get(col!("owner_uid")).map_err(err)?,
                    generate_name: r.get(col!("generate_name")).map_err(err)?,
                    spec_hash: r.get(col!("spec_hash")).map_err(err)?,
                    creation_timestamp: r.get(col!("creation_timestamp")).map_err(err)?,
                    deletion_timestamp: r.get(col!("deletion_timestamp")).map_err(err)?,
                    phase: r.get(col!("phase")).map_err(err)?,
                    node: r.get(col!("node")).map_err(err)?,
                    desired: r.get(col!("desired")).map_err(err)?,
                    managers: r.get(col!("managers")).map_err(err)?,
                    observed_generation: r.get(col!("observed_generation")).map_err(err)?,
                    finalizers: r.get(col!("finalizers")).map_err(err)?,
                    owner_refs: r.get(col!("owner_refs")).map_err(err)?,
                    written_at: r.get(col!("written_at")).map_err(err)?,
                    // Kept as a mark of the clock (`clock_marks`), not per revision.
                    renew_time: None,
                    event_time: r.get(col!("event_time")).map_err(err)?,
                    foreign: r.get(col!("foreign_evidence")).map_err(err)?,
                },
                duplicates: r.get(col!("duplicates")).map_err(err)?,
                semantic_sha256: r.get(col!("semantic_sha256")).map_err(err)?,
                generation: r.get(col!("generation")).map_err(err)?,
                encoding: text(col!("encoding"))?,
                api_version: r.get(col!("api_version")).map_err(err)?,
                encryption: r.get(col!("encryption")).map_err(err)?,
                class: self.named(
                    text(col!("change_class"))?,
                    "revisions.change_class",
                    ChangeClass::parse,
                )?,
                cause: self.named(
                    text(col!("change_cause"))?,
                    "revisions.change_cause",
                    ChangeCause::parse,
                )?,
                changed_paths: match text(col!("changed_paths"))? {
                    Some(t) => {
                        serde_json::from_str(&t).map_err(|e| self.damaged("revisions.changed_paths", e))?
                    }
                    None => Vec::new(),
                },
                changed_by: match text(col!("changed_by"))? {
                    Some(t) => {
                        serde_json::from_str(&t).map_err(|e| self.damaged("revisions.changed_by", e))?
                    }
                    None => BTreeMap::new(),
                },
                fields: decode_fields(&fields, &paths, FIELDS)
                    .map_err(err)?
                    .unwrap_or_default(),
            };
            self.check_encoding(rev.encoding.as_deref())?;
            self.check_encryption(rev.encryption.as_deref())?;
            if current.last().is_some_and(|c| c.key != rev.key) {
                visit(&current);
                current.clear();
            }
            current.push(rev);
        }
        if !current.is_empty() {
            visit(&current);
        }
        Ok(())
    }

    fn run_cluster(&self, run: i64) -> Result<Option<i64>, StoreError> {
        use rusqlite::OptionalExtension;
        self.conn
            .query_row("SELECT cluster_id FROM runs WHERE id = ?1", [run], |r| r.get(0))
            .optional()
            .map(Option::flatten)
            .map_err(|e| self.err(e))
    }
}

impl crate::store::recorder::ClassWrites for Store {
    fn classify_pending(&self, cluster: Option<i64>) -> Result<ClassifyStats, StoreError> {
        let err = |e| self.err(e);
        let paths = self.field_path_names()?;
        let keys: Vec<i64> = {
            let mut stmt = self
                .conn
                .prepare(
                    "SELECT DISTINCT r.key_id FROM revisions r JOIN keys k ON k.id = r.key_id \
                     WHERE r.change_class IS NULL AND (?1 IS NULL OR k.cluster_id = ?1)",
                )
                .map_err(err)?;
            let rows = stmt.query_map([cluster], |r| r.get(0)).map_err(err)?;
            rows.collect::<Result<_, _>>().map_err(err)?
        };
        let mut stats = ClassifyStats::default();
        self.in_transaction(|| {
            let mut read = self
                .conn
                .prepare_cached(
                    "SELECT r.mod_revision, r.create_revision, r.version, r.deleted, r.value_sha256, r.semantic_sha256, \
                     r.encoding, r.api_version, r.encryption, s.codec, s.fields, b.fields, r.change_class IS NULL, s.codec, s.managed, \
                     b.managed, r.hash_key \
                     FROM revisions r LEFT JOIN semantic_values s ON s.hash = r.semantic_sha256 \
                     LEFT JOIN semantic_values b ON b.id = s.base \
                     WHERE r.key_id = ?1 ORDER BY r.mod_revision",
                )
                .map_err(err)?;
            let mut write = self
                .conn
                .prepare_cached(
                    "UPDATE revisions SET change_class = ?3, change_cause = ?4, changed_paths = ?5, changed_by = ?6 \
                     WHERE key_id = ?1 AND mod_revision = ?2",
                )
                .map_err(err)?;
            for key in keys {
                let rows: Vec<Revision> = read
                    .query_map([key], |r| {
                        let fields = super::packed(r, 9)?;
                        let managed = super::packed(r, 13)?;
                        Ok(Revision {
                            mod_revision: r.get(0)?,
                            create_revision: r.get(1)?,
                            facts: Facts {
                                version: r.get(2)?,
                                deleted: r.get(3)?,
                                value_hash: r.get(4)?,
                                semantic_hash: r.get(5)?,
                                encoding: r.get(6)?,
                                api_version: r.get(7)?,
                                encryption: r.get(8)?,
                                fields: decode_fields(&fields, &paths, 9)?,
                                hash_key: r.get(16)?,
                            },
                            pending: r.get(12)?,
                            managed,
                        })
                    })
                    .map_err(err)?
                    .collect::<Result<_, _>>()
                    .map_err(err)?;
                for row in &rows {
                    self.check_encoding(row.facts.encoding.as_deref())?;
                    self.check_encryption(row.facts.encryption.as_deref())?;
                }
                stats.rows_read += rows.len() as i64;
                stats.classified += classify_history(
                    &rows,
                    &|e| self.damaged("semantic_values.managed", e),
                    &mut |c| {
                        write
                            .execute(params![
                                key,
                                c.mod_revision,
                                c.class,
                                c.cause,
                                c.changed_paths,
                                c.changed_by
                            ])
                            .map(|_| ())
                            .map_err(err)
                    },
                )?;
            }
            Ok::<_, StoreError>(())
        })?;
        Ok(stats)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::source::Sink;
    use crate::store::finding::{Finding, Severity, StoredFinding};
    use crate::store::reader::ChangeReads;
    use crate::store::reader::FindingReads;
    use crate::store::recorder::ClassWrites;
    use crate::store::recorder::FindingWrites;

    use std::path::PathBuf;

    /// A database holding one finding and two classified revisions of a
    /// ConfigMap.
    fn database(dir: &tempfile::TempDir) -> (Store, PathBuf, i64) {
        let path = dir.path().join("db.sqlite");
        let store = Store::open_for_writing(&path).unwrap();
        let (cluster, run, fields) = crate::store::sqlite::test_run(&store);
        let mut w = crate::lifecycle::RevisionWriter::unfiltered(&store, cluster, run, fields).unwrap();
        for (revision, value) in [(2, "a"), (3, "b")] {
            let object = serde_json::json!({"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": "c", "namespace": "shop", "uid": "u"}, "data": {"k": value}});
            w.record(crate::store::sqlite::test_record(
                "/registry/configmaps/shop/c",
                revision,
                2,
                &object,
            ))
            .unwrap();
        }
        w.flush().unwrap();
        drop(w);
        store.classify_pending(None).unwrap();
        let finding = Finding {
            detector: "rewrite",
            severity: Severity::High,
            keys: vec!["/registry/configmaps/shop/c".into()],
            revisions: vec![3],
            summary: "s".into(),
            details: serde_json::json!({}),
        };
        let mut writer = store.findings_writer(cluster, &["rewrite"]).unwrap();
        writer.put(&finding).unwrap();
        writer.commit().unwrap();
        (store, path, cluster)
    }

    /// What reading the history fails with once `sql` damaged it.
    fn history_error(sql: &str) -> String {
        let dir = tempfile::tempdir().unwrap();
        let (store, path, cluster) = database(&dir);
        let mut classes = Vec::new();
        store
            .key_histories(cluster, &mut |h| classes.extend(h.iter().map(|r| r.class)))
            .unwrap();
        assert_eq!(classes, [Some(ChangeClass::Create), Some(ChangeClass::Spec)]);
        super::super::damage(&path, sql);
        let e = store.key_histories(cluster, &mut |_| {}).unwrap_err().to_string();
        assert!(e.contains(&path.display().to_string()), "{e}");
        e
    }

    /// What reading the findings fails with once `sql` damaged them.
    fn findings_error(sql: &str) -> String {
        let dir = tempfile::tempdir().unwrap();
        let (store, path, _) = database(&dir);
        let all = |store: &Store| {
            store
                .findings(&Default::default())
                .collect::<Result<Vec<StoredFinding>, _>>()
        };
        assert_eq!(all(&store).unwrap()[0].severity, Severity::High);
        super::super::damage(&path, sql);
        let e = all(&store).unwrap_err().to_string();
        assert!(e.contains(&path.display().to_string()), "{e}");
        e
    }

    #[test]
    fn an_unknown_severity_is_damage_not_info() {
        let e = findings_error("UPDATE findings SET severity = 'urgent'");
        assert!(
            e.contains("findings.severity: \"urgent\" is not a severity"),
            "{e}"
        );
    }

    #[test]
    fn finding_lists_that_do_not_parse_are_damage() {
        assert!(findings_error("UPDATE findings SET keys = 'nope'").contains("findings.keys"));
        assert!(findings_error("UPDATE findings SET revisions = '[\"x\"]'").contains("findings.revisions"));
        assert!(findings_error("UPDATE findings SET details = '{'").contains("findings.details"));
    }

    #[test]
    fn unknown_classes_causes_and_encodings_are_damage() {
        let e = history_error("UPDATE revisions SET change_class = 'sideways' WHERE mod_revision = 3");
        assert!(
            e.contains("revisions.change_class: \"sideways\" is not a change class"),
            "{e}"
        );
        let e = history_error("UPDATE revisions SET change_cause = 'moon' WHERE mod_revision = 3");
        assert!(
            e.contains("revisions.change_cause: \"moon\" is not a change cause"),
            "{e}"
        );
        let e = history_error("UPDATE revisions SET encoding = 'xml' WHERE mod_revision = 3");
        assert!(
            e.contains("revisions.encoding: \"xml\" is not an encoding"),
            "{e}"
        );
    }
}
