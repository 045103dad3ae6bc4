//! Change classes in the database: the classification pass, and the
//! classified history detectors read, written once over [`Sql`].

use super::classify::{classify_history, Classified, PassRevision};
use super::field_blob::PathNames;
use super::object::ObjectRevision;
use super::reader::ChangeReads;
use super::recorder::ClassWrites;
use super::sql::{first_row, Cursor, Sql};
use super::tables::Cell;
use super::{ClassifyStats, ClusterId, Gap, RunId, StoreError};
use crate::canon::change::{ChangeCause, ChangeClass, Facts};
use crate::canon::facts::ObjectFacts;
use crate::canon::path::FieldPath;
use crate::canon::semantic::FIELD_HASH_LEN;
use crate::decode::envelope::Encoding;
use crate::decrypt::label::Label;
use crate::ingest::blob::Packed;
use crate::ingest::revision::TEXT_ENCODING;
use std::collections::BTreeMap;
use std::sync::LazyLock;

/// Revisions a classification pass reads (and then writes) at a time: the
/// histories of as many keys as reach it, and at least one key.
const CLASSIFIED_PER_PASS: i64 = 5000;

/// Keys a classification pass looks at per query for pending revisions.
const PENDING_KEYS: i64 = 256;

/// Interned field paths by id.
pub(super) fn path_names(db: &(impl Sql + ?Sized)) -> Result<PathNames, StoreError> {
    let mut out = Vec::new();
    db.each(
        "field_paths",
        "SELECT id, path FROM field_paths",
        &[],
        &mut |row| {
            let mut c = Cursor::new(db, "field_paths", row);
            let id = c.int("id")?;
            let path = c.parsed("path", FieldPath::parse)?;
            out.push((id, path.ok_or_else(|| c.damage("path", "NULL"))?));
            Ok(())
        },
    )?;
    Ok(PathNames::new(out))
}

/// A `semantic_values.fields` column read as field path → hash; `None`
/// when the value has none. A blob that does not decompress or parse is
/// damage.
pub(super) fn decode_fields(
    c: &Cursor,
    packed: &Packed,
    paths: &PathNames,
) -> Result<Option<BTreeMap<FieldPath, [u8; FIELD_HASH_LEN]>>, StoreError> {
    const COLUMN: &str = "semantic_values.fields";
    let Some(blob) = packed.field_bytes() else {
        return Ok(None);
    };
    let blob = blob.map_err(|e| c.damage(COLUMN, e))?;
    super::field_blob::decode(&blob, paths)
        .map(Some)
        .map_err(|e| c.damage(COLUMN, e))
}

/// Fails unless `encoding` (a `revisions.encoding`) is one the decoder
/// names, or the plain text of etcd's compaction key; and `label` (a
/// `revisions.encryption`) reads as an encryption label.
pub(super) fn check_encoding(
    c: &Cursor,
    encoding: Option<&str>,
    label: Option<&str>,
) -> Result<(), StoreError> {
    if let Some(name) = encoding.filter(|e| *e != TEXT_ENCODING) {
        Encoding::parse(name).map_err(|e| c.damage("revisions.encoding", e))?;
    }
    if let Some(text) = label {
        Label::parse(text).map_err(|e| c.damage("revisions.encryption", e))?;
    }
    Ok(())
}

/// What `key_histories` selects, in the order it reads the columns:
/// the order of [`ObjectRevision`]'s fields.
static HISTORY_COLUMNS: LazyLock<String> = LazyLock::new(|| {
    let facts: Vec<String> = ObjectFacts::COLUMNS.iter().map(|c| format!("r.{c}")).collect();
    format!(
        "k.key, k.resource, k.api_group, r.mod_revision, r.create_revision, r.version, \
         r.deleted, r.kind, coalesce(r.namespace, k.namespace), coalesce(r.name, k.name), r.uid, {}, \
         r.duplicates, r.semantic_sha256, r.generation, r.encoding, r.api_version, r.encryption, \
         r.change_class, r.change_cause, r.changed_paths, r.changed_by, s.codec, s.fields, b.fields",
        facts.join(", ")
    )
});

/// One row of [`HISTORY_COLUMNS`] as a revision.
fn object_revision(c: &mut Cursor, paths: &PathNames) -> Result<ObjectRevision, StoreError> {
    let rev = ObjectRevision {
        key: c.lossy("key")?,
        resource: c.opt_text("resource")?,
        group: c.opt_text("api_group")?,
        mod_revision: c.revision("mod_revision")?,
        create_revision: c.revision("create_revision")?,
        version: c.int("version")?,
        deleted: c.flag("deleted")?,
        kind: c.opt_text("kind")?,
        namespace: c.opt_text("namespace")?,
        name: c.opt_text("name")?,
        uid: c.opt_text("uid")?,
        facts: ObjectFacts::read(c)?,
        duplicates: c.opt_text("duplicates")?,
        semantic_sha256: c.opt_bytes("semantic_sha256")?,
        generation: c.opt_int("generation")?,
        encoding: c.opt_text("encoding")?,
        api_version: c.opt_text("api_version")?,
        encryption: c.opt_text("encryption")?,
        class: c.parsed("change_class", ChangeClass::parse)?,
        cause: c.parsed("change_cause", ChangeCause::parse)?,
        changed_paths: c.json("changed_paths")?,
        changed_by: c.json("changed_by")?,
        fields: BTreeMap::new(),
    };
    let packed = c.packed("semantic_values.fields")?;
    let fields = decode_fields(c, &packed, paths)?.unwrap_or_default();
    check_encoding(c, rev.encoding.as_deref(), rev.encryption.as_deref())?;
    Ok(ObjectRevision { fields, ..rev })
}

impl<T: Sql + ?Sized> ChangeReads for T {
    fn gaps(&self, cluster: ClusterId) -> Result<Vec<Gap>, StoreError> {
        let mut out = Vec::new();
        self.each(
            "history_gaps",
            "SELECT from_revision, to_revision FROM history_gaps WHERE cluster_id = $1 ORDER BY from_revision",
            &[Cell::from(cluster)],
            &mut |row| {
                let mut c = Cursor::new(self, "history_gaps", row);
                out.push(Gap {
                    from_revision: c.revision("from_revision")?,
                    to_revision: c.revision("to_revision")?,
                });
                Ok(())
            },
        )?;
        Ok(out)
    }

    fn key_histories(
        &self,
        cluster: ClusterId,
        visit: &mut dyn FnMut(&[ObjectRevision]),
    ) -> Result<(), StoreError> {
        let paths = path_names(self)?;
        let mut current: Vec<ObjectRevision> = Vec::new();
        self.each(
            "revisions",
            &format!(
                "SELECT {} FROM revisions r JOIN keys k ON k.id = r.key_id \
                 LEFT JOIN semantic_values s ON s.hash = r.semantic_sha256 \
                 LEFT JOIN semantic_values b ON b.id = s.base \
                 WHERE k.cluster_id = $1 ORDER BY k.key, r.mod_revision",
                *HISTORY_COLUMNS
            ),
            &[Cell::from(cluster)],
            &mut |row| {
                let rev = object_revision(&mut Cursor::new(self, "revisions", row), &paths)?;
                if current.last().is_some_and(|c| c.key != rev.key) {
                    visit(&current);
                    current.clear();
                }
                current.push(rev);
                Ok(())
            },
        )?;
        if !current.is_empty() {
            visit(&current);
        }
        Ok(())
    }

    fn run_cluster(&self, run: RunId) -> Result<Option<ClusterId>, StoreError> {
        let cluster = first_row(
            self,
            "runs",
            "SELECT cluster_id FROM runs WHERE id = $1",
            &[Cell::Int(run.0)],
            |c| c.opt_int("cluster_id"),
        )?;
        Ok(cluster.flatten().map(ClusterId))
    }
}

/// The columns a classification pass reads of each revision.
const PASS_COLUMNS: &str =
    "r.key_id, r.mod_revision, r.create_revision, r.version, r.deleted, r.value_sha256, \
     r.semantic_sha256, r.encoding, r.api_version, r.encryption, s.codec, s.fields, b.fields, r.hash_key, \
     CASE WHEN r.change_class IS NULL THEN 1 ELSE 0 END, s.codec, s.managed, b.managed";

/// One row of [`PASS_COLUMNS`]: its key and the revision.
fn pass_revision(c: &mut Cursor, paths: &PathNames) -> Result<(i64, PassRevision), StoreError> {
    let key = c.int("key_id")?;
    let mod_revision = c.revision("mod_revision")?;
    let create_revision = c.revision("create_revision")?;
    let version = c.int("version")?;
    let deleted = c.flag("deleted")?;
    let value_hash = c.opt_bytes("value_sha256")?;
    let semantic_hash = c.opt_bytes("semantic_sha256")?;
    let encoding = c.opt_text("encoding")?;
    let api_version = c.opt_text("api_version")?;
    let encryption = c.opt_text("encryption")?;
    let packed = c.packed("semantic_values.fields")?;
    let fields = decode_fields(c, &packed, paths)?;
    check_encoding(c, encoding.as_deref(), encryption.as_deref())?;
    let facts = Facts {
        version,
        deleted,
        value_hash,
        semantic_hash,
        encoding,
        api_version,
        encryption,
        fields,
        hash_key: c.opt_text("hash_key")?,
    };
    let pending = c.flag("change_class")?;
    let managed = c.packed("semantic_values.managed")?;
    Ok((
        key,
        PassRevision {
            mod_revision,
            create_revision,
            facts,
            pending,
            managed,
        },
    ))
}

impl<T: Sql + ?Sized> ClassWrites for T {
    /// Where the backend's reads see the database as it was when they
    /// began ([`super::sql::Dialect::snapshot_reads`]), one read of every pending
    /// key's history, writing classes as they come; otherwise a pass at a
    /// time: the next keys with pending revisions, up to
    /// [`CLASSIFIED_PER_PASS`] revisions of theirs, are read whole, then
    /// their classes written, so that no write lands on a table a read is
    /// still stepping through. Memory holds one key's history and at most
    /// a pass's classes.
    fn classify_pending(&self, cluster: Option<ClusterId>) -> Result<ClassifyStats, StoreError> {
        let paths = path_names(self)?;
        let mut stats = ClassifyStats::default();
        let cluster = cluster.map_or(Cell::Null, Cell::from);
        self.atomically(&mut || {
            if self.dialect().snapshot_reads {
                let pending = "r.key_id IN (SELECT u.key_id FROM revisions u WHERE u.change_class IS NULL \
                               AND (CAST($1 AS bigint) IS NULL OR u.cluster_id = $1))";
                return classify_keys(self, pending, std::slice::from_ref(&cluster), &paths, &mut stats);
            }
            let mut after = -1;
            loop {
                let keys = pending_keys(self, after, &cluster)?;
                let Some(&last) = keys.last() else { break };
                after = last;
                let listed = format!("r.key_id IN {}", self.dialect().id_list);
                classify_keys(self, &listed, &[super::sql::id_list(&keys)], &paths, &mut stats)?;
            }
            Ok(())
        })?;
        Ok(stats)
    }
}

/// Classifies the pending revisions of the keys `condition` (over `r`,
/// with `params`) selects, reading their whole histories in one statement;
/// writes the classes at its end, and, where the read is a snapshot, a
/// pass's worth at a time as well.
fn classify_keys(
    db: &(impl Sql + ?Sized),
    condition: &str,
    params: &[Cell],
    paths: &PathNames,
    stats: &mut ClassifyStats,
) -> Result<(), StoreError> {
    let snapshot = db.dialect().snapshot_reads;
    let mut written = Vec::new();
    let mut history: Vec<PassRevision> = Vec::new();
    let mut key = None;
    let mut classify = |key: Option<i64>, history: &mut Vec<PassRevision>, written: &mut Vec<Cell>| {
        let Some(key) = key else { return Ok(()) };
        stats.rows_read += history.len() as i64;
        stats.classified += classify_history(
            history,
            &|e| db.typed("semantic_values").damage("managed", e),
            &mut |c: Classified| {
                written.extend([
                    Cell::Int(key),
                    c.mod_revision.into(),
                    Cell::Text(c.class.to_string()),
                    c.cause.map_or(Cell::Null, |c| Cell::Text(c.to_string())),
                    c.changed_paths.map_or(Cell::Null, Cell::Text),
                    c.changed_by.map_or(Cell::Null, Cell::Text),
                ]);
                Ok(())
            },
        )?;
        history.clear();
        Ok::<_, StoreError>(())
    };
    db.each(
        "revisions",
        &format!(
            "SELECT {PASS_COLUMNS} FROM revisions r \
             LEFT JOIN semantic_values s ON s.hash = r.semantic_sha256 \
             LEFT JOIN semantic_values b ON b.id = s.base \
             WHERE {condition} ORDER BY r.key_id, r.mod_revision"
        ),
        params,
        &mut |row| {
            let (row_key, revision) = pass_revision(&mut Cursor::new(db, "revisions", row), paths)?;
            if key != Some(row_key) {
                classify(key, &mut history, &mut written)?;
                key = Some(row_key);
                // Where the read is a snapshot, classes need not wait for it.
                if snapshot && written.len() >= CLASSIFIED_PER_PASS as usize * CLASS_COLUMNS.len() {
                    write_classes(db, &written)?;
                    written.clear();
                }
            }
            history.push(revision);
            Ok(())
        },
    )?;
    classify(key, &mut history, &mut written)?;
    write_classes(db, &written)
}

/// The next keys past key `after` with revisions of `cluster` (NULL: of
/// any) that have no change class: as many as hold about
/// [`CLASSIFIED_PER_PASS`] revisions, in key order.
fn pending_keys(db: &(impl Sql + ?Sized), after: i64, cluster: &Cell) -> Result<Vec<i64>, StoreError> {
    let mut keys = Vec::new();
    let mut revisions = 0;
    db.each(
        "revisions",
        "SELECT p.key_id, (SELECT count(*) FROM revisions c WHERE c.key_id = p.key_id) \
         FROM (SELECT DISTINCT key_id FROM revisions WHERE change_class IS NULL AND key_id > $1 \
               AND (CAST($2 AS bigint) IS NULL OR cluster_id = CAST($2 AS bigint)) \
               ORDER BY key_id LIMIT $3) p ORDER BY p.key_id",
        &[Cell::Int(after), cluster.clone(), Cell::Int(PENDING_KEYS)],
        &mut |row| {
            if revisions < CLASSIFIED_PER_PASS {
                let mut c = Cursor::new(db, "revisions", row);
                keys.push(c.int("key_id")?);
                revisions += c.int("count")?;
            }
            Ok(())
        },
    )?;
    Ok(keys)
}

/// The columns of a class written: key and revision, then what is set.
const CLASS_COLUMNS: [(&str, &str); 6] = [
    ("key_id", "bigint"),
    ("mod_revision", "bigint"),
    ("change_class", "text"),
    ("change_cause", "text"),
    ("changed_paths", "text"),
    ("changed_by", "text"),
];

/// Writes classes: rows of [`CLASS_COLUMNS`].
fn write_classes(db: &(impl Sql + ?Sized), cells: &[Cell]) -> Result<(), StoreError> {
    db.update_rows("revisions", &CLASS_COLUMNS, 2, cells)
}

#[cfg(test)]
mod tests {
    use crate::canon::change::ChangeClass;
    use crate::source::{Revision, Sink};
    use crate::store::finding::{Finding, Severity, StoredFinding};
    use crate::store::reader::ChangeReads;
    use crate::store::reader::FindingReads;
    use crate::store::recorder::ClassWrites;
    use crate::store::recorder::FindingWrites;
    use crate::store::sqlite::Store;

    use std::path::PathBuf;

    /// A database holding one finding and two classified revisions of a
    /// ConfigMap.
    fn database(dir: &tempfile::TempDir) -> (Store, PathBuf, crate::store::ClusterId) {
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
            revisions: vec![Revision(3)],
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
        crate::store::sqlite::damage(&path, sql);
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
        crate::store::sqlite::damage(&path, sql);
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

    #[test]
    fn one_key_s_history_names_an_unknown_encoding_or_label_as_damage() {
        use crate::store::reader::HistoryReads;
        let dir = tempfile::tempdir().unwrap();
        let (store, path, cluster) = database(&dir);
        let mut key = String::new();
        store
            .key_histories(cluster, &mut |h| key = h[0].key.clone())
            .unwrap();
        assert_eq!(store.history(key.as_bytes(), Some(cluster)).unwrap().len(), 2);
        crate::store::sqlite::damage(
            &path,
            "UPDATE revisions SET encoding = 'xml' WHERE mod_revision = 3",
        );
        let e = store
            .history(key.as_bytes(), Some(cluster))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("revisions.encoding: \"xml\" is not an encoding"),
            "{e}"
        );
        crate::store::sqlite::damage(
            &path,
            "UPDATE revisions SET encoding = 'json', encryption = 'rot13:k'",
        );
        let e = store
            .history(key.as_bytes(), Some(cluster))
            .unwrap_err()
            .to_string();
        assert!(e.contains("revisions.encryption"), "{e}");
    }
}
