//! Change classes in the database: the classification pass, and the
//! classified history detectors read.

use super::Store;
use crate::canon::change::{ChangeCause, ChangeClass, Facts};
use crate::canon::facts::ObjectFacts;
use crate::canon::path::FieldPath;
use crate::canon::semantic::FIELD_HASH_LEN;
use crate::decode::envelope::Encoding;
use crate::decrypt::label::Label;
use crate::ingest::blob::Packed;
use crate::ingest::revision::TEXT_ENCODING;
use crate::store::classify::{classify_history, Classified, Revision};
use crate::store::field_blob::PathNames;
use crate::store::object::ObjectRevision;
use crate::store::ClassifyStats;
use crate::store::StoreError;
use crate::unknown::UnknownName;
use postgres::types::FromSql;
use postgres::Row;
use std::collections::BTreeMap;

/// A row's columns read one after another, for selects too wide to count.
pub(super) struct InOrder<'r> {
    store: &'r Store,
    row: &'r Row,
    at: usize,
}

impl<'r> InOrder<'r> {
    pub(super) fn new(store: &'r Store, row: &'r Row) -> InOrder<'r> {
        InOrder { store, row, at: 0 }
    }

    /// The next column.
    pub(super) fn next<T: FromSql<'r>>(&mut self) -> Result<T, StoreError> {
        self.at += 1;
        self.row.try_get(self.at - 1).map_err(|e| self.store.err(e))
    }

    /// The next three columns: a blob's codec, the blob and its base's blob.
    pub(super) fn packed(&mut self) -> Result<Packed, StoreError> {
        Ok(Packed {
            codec: self.next()?,
            blob: self.next()?,
            base: self.next()?,
        })
    }
}

impl Store {
    /// Decodes a `semantic_values.fields` column; `None` when the value has
    /// none. A blob that does not decompress or parse is damage.
    pub(super) fn decode_fields(
        &self,
        packed: &Packed,
        paths: &PathNames,
    ) -> Result<Option<BTreeMap<FieldPath, [u8; FIELD_HASH_LEN]>>, StoreError> {
        let Some(blob) = packed.field_bytes() else {
            return Ok(None);
        };
        let blob = blob.map_err(|e| self.damaged("semantic_values.fields", e))?;
        crate::store::field_blob::decode(&blob, paths)
            .map(Some)
            .map_err(|e| self.damaged("semantic_values.fields", e))
    }

    /// Interned field paths by id.
    pub(super) fn field_path_names(&self) -> Result<PathNames, StoreError> {
        let mut out = Vec::new();
        for r in self.query("SELECT id, path FROM field_paths", &[])? {
            let text: String = r.try_get(1).map_err(|e| self.err(e))?;
            let path = FieldPath::parse(&text).map_err(|e| self.damaged("field_paths.path", e))?;
            out.push((r.try_get(0).map_err(|e| self.err(e))?, path));
        }
        Ok(PathNames::new(out))
    }

    /// Writes a batch of classified revisions in one statement and empties
    /// it.
    fn write_classes(&self, batch: &mut Batch) -> Result<(), StoreError> {
        if batch.keys.is_empty() {
            return Ok(());
        }
        self.execute(
            "UPDATE revisions r SET change_class = u.class, change_cause = u.cause, changed_paths = u.paths, \
             changed_by = u.managers \
             FROM unnest($1::bigint[], $2::bigint[], $3::text[], $4::text[], $5::text[], $6::text[]) \
             AS u(key_id, mod_revision, class, cause, paths, managers) \
             WHERE r.key_id = u.key_id AND r.mod_revision = u.mod_revision",
            &[
                &batch.keys,
                &batch.revisions,
                &batch.classes,
                &batch.causes,
                &batch.changed_paths,
                &batch.changed_by,
            ],
        )?;
        *batch = Batch::default();
        Ok(())
    }
}

/// Classified revisions waiting to be written, column by column.
#[derive(Default)]
struct Batch {
    keys: Vec<i64>,
    revisions: Vec<i64>,
    classes: Vec<&'static str>,
    causes: Vec<Option<&'static str>>,
    changed_paths: Vec<Option<String>>,
    changed_by: Vec<Option<String>>,
}

impl Batch {
    fn push(&mut self, key: i64, c: Classified) {
        self.keys.push(key);
        self.revisions.push(c.mod_revision);
        self.classes.push(c.class);
        self.causes.push(c.cause);
        self.changed_paths.push(c.changed_paths);
        self.changed_by.push(c.changed_by);
    }
}

/// What `key_histories` selects, in the order it reads the columns:
/// the order of [`ObjectRevision`]'s fields.
const HISTORY_COLUMNS: &str =
    "k.key, k.resource, k.api_group, r.mod_revision, r.create_revision, r.version, \
     r.deleted, r.kind, coalesce(r.namespace, k.namespace), coalesce(r.name, k.name), r.uid, \
     r.owner_kind, r.owner_name, r.owner_uid, r.generate_name, r.spec_hash, r.creation_timestamp, \
     r.deletion_timestamp, r.phase, r.node, r.desired, r.managers, r.observed_generation, r.finalizers, \
     r.owner_refs, r.written_at, r.event_time, r.foreign_evidence, \
     r.duplicates, r.semantic_sha256, r.generation, r.encoding, r.api_version, r.encryption, \
     r.change_class, r.change_cause, r.changed_paths, r.changed_by, s.codec, s.fields, b.fields";

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

    /// A stored JSON text column as `T` (`T::default()` when NULL); text
    /// that does not parse is damage.
    pub(super) fn json_column<T: serde::de::DeserializeOwned + Default>(
        &self,
        stored: Option<String>,
        column: &str,
    ) -> Result<T, StoreError> {
        match stored {
            Some(text) => serde_json::from_str(&text).map_err(|e| self.damaged(column, e)),
            None => Ok(T::default()),
        }
    }

    /// Fails unless `encoding` (a `revisions.encoding`) is one the decoder
    /// names, or the plain text of etcd's compaction key.
    fn check_encoding(&self, encoding: Option<&str>) -> Result<(), StoreError> {
        match encoding {
            None | Some(TEXT_ENCODING) => Ok(()),
            Some(name) => Encoding::parse(name)
                .map(|_| ())
                .map_err(|e| self.damaged("revisions.encoding", e)),
        }
    }

    /// Fails unless `label` (a `revisions.encryption`) reads as an
    /// encryption label.
    fn check_encryption(&self, label: Option<&str>) -> Result<(), StoreError> {
        match label {
            None => Ok(()),
            Some(text) => Label::parse(text)
                .map(|_| ())
                .map_err(|e| self.damaged("revisions.encryption", e)),
        }
    }

    /// One row of [`HISTORY_COLUMNS`] as a revision.
    fn object_revision(&self, r: &Row, paths: &PathNames) -> Result<ObjectRevision, StoreError> {
        let mut c = InOrder::new(self, r);
        let key: Vec<u8> = c.next()?;
        let rev = ObjectRevision {
            key: String::from_utf8_lossy(&key).into_owned(),
            resource: c.next()?,
            group: c.next()?,
            mod_revision: c.next()?,
            create_revision: c.next()?,
            version: c.next()?,
            deleted: c.next()?,
            kind: c.next()?,
            namespace: c.next()?,
            name: c.next()?,
            uid: c.next()?,
            facts: ObjectFacts {
                owner_kind: c.next()?,
                owner_name: c.next()?,
                owner_uid: c.next()?,
                generate_name: c.next()?,
                spec_hash: c.next()?,
                creation_timestamp: c.next()?,
                deletion_timestamp: c.next()?,
                phase: c.next()?,
                node: c.next()?,
                desired: c.next()?,
                managers: c.next()?,
                observed_generation: c.next()?,
                finalizers: c.next()?,
                owner_refs: c.next()?,
                written_at: c.next()?,
                // Kept as a mark of the clock (`clock_marks`), not per revision.
                renew_time: None,
                event_time: c.next()?,
                foreign: c.next()?,
            },
            duplicates: c.next()?,
            semantic_sha256: c.next()?,
            generation: c.next()?,
            encoding: c.next()?,
            api_version: c.next()?,
            encryption: c.next()?,
            class: self.named(c.next()?, "revisions.change_class", ChangeClass::parse)?,
            cause: self.named(c.next()?, "revisions.change_cause", ChangeCause::parse)?,
            changed_paths: self.json_column(c.next()?, "revisions.changed_paths")?,
            changed_by: self.json_column(c.next()?, "revisions.changed_by")?,
            fields: self.decode_fields(&c.packed()?, paths)?.unwrap_or_default(),
        };
        self.check_encoding(rev.encoding.as_deref())?;
        self.check_encryption(rev.encryption.as_deref())?;
        Ok(rev)
    }
}

impl crate::store::reader::ChangeReads for Store {
    fn gaps(&self, cluster: i64) -> Result<Vec<crate::store::Gap>, StoreError> {
        self.query(
            "SELECT from_revision, to_revision FROM history_gaps WHERE cluster_id = $1 ORDER BY from_revision",
            &[&cluster],
        )?
        .iter()
        .map(|r| {
            Ok(crate::store::Gap {
                from_revision: r.try_get(0)?,
                to_revision: r.try_get(1)?,
            })
        })
        .collect::<Result<_, postgres::Error>>()
        .map_err(|e| self.err(e))
    }

    fn key_histories(
        &self,
        cluster: i64,
        visit: &mut dyn FnMut(&[ObjectRevision]),
    ) -> Result<(), StoreError> {
        let paths = self.field_path_names()?;
        let mut current: Vec<ObjectRevision> = Vec::new();
        self.each_page(
            &format!(
                "SELECT {HISTORY_COLUMNS} FROM revisions r JOIN keys k ON k.id = r.key_id \
                 LEFT JOIN semantic_values s ON s.hash = r.semantic_sha256 \
                 LEFT JOIN semantic_values b ON b.id = s.base \
                 WHERE k.cluster_id = $1 ORDER BY k.key, r.mod_revision"
            ),
            &[&cluster],
            &mut |rows| {
                for r in rows {
                    let rev = self.object_revision(r, &paths)?;
                    if current.last().is_some_and(|c| c.key != rev.key) {
                        visit(&current);
                        current.clear();
                    }
                    current.push(rev);
                }
                Ok(())
            },
        )?;
        if !current.is_empty() {
            visit(&current);
        }
        Ok(())
    }

    fn run_cluster(&self, run: i64) -> Result<Option<i64>, StoreError> {
        self.query_opt("SELECT cluster_id FROM runs WHERE id = $1", &[&run])?
            .map(|r| r.try_get::<_, Option<i64>>(0))
            .transpose()
            .map(Option::flatten)
            .map_err(|e| self.err(e))
    }
}

impl crate::store::recorder::ClassWrites for Store {
    fn classify_pending(&self, cluster: Option<i64>) -> Result<ClassifyStats, StoreError> {
        let paths = self.field_path_names()?;
        let mut stats = ClassifyStats::default();
        self.in_transaction(|| {
            let mut key: Option<i64> = None;
            let mut history: Vec<Revision> = Vec::new();
            let mut batch = Batch::default();
            let mut classify = |key: Option<i64>, history: &mut Vec<Revision>, batch: &mut Batch| {
                let Some(key) = key else { return Ok(()) };
                stats.rows_read += history.len() as i64;
                stats.classified += classify_history(
                    history,
                    &|e| self.damaged("semantic_values.managed", e),
                    &mut |c| {
                        batch.push(key, c);
                        Ok(())
                    },
                )?;
                history.clear();
                if batch.keys.len() as i64 >= super::PAGE {
                    self.write_classes(batch)?;
                }
                Ok::<_, StoreError>(())
            };
            self.each_page(
                "SELECT r.key_id, r.mod_revision, r.create_revision, r.version, r.deleted, r.value_sha256, \
                 r.semantic_sha256, r.encoding, r.api_version, r.encryption, s.codec, s.fields, b.fields, r.hash_key, \
                 r.change_class IS NULL, s.codec, s.managed, b.managed \
                 FROM revisions r LEFT JOIN semantic_values s ON s.hash = r.semantic_sha256 \
                 LEFT JOIN semantic_values b ON b.id = s.base \
                 WHERE r.key_id IN (SELECT u.key_id FROM revisions u \
                   WHERE u.change_class IS NULL AND ($1::bigint IS NULL OR u.cluster_id = $1::bigint)) \
                 ORDER BY r.key_id, r.mod_revision",
                &[&cluster],
                &mut |rows| {
                    for r in rows {
                        let mut c = InOrder::new(self, r);
                        let row_key: i64 = c.next()?;
                        if key != Some(row_key) {
                            classify(key, &mut history, &mut batch)?;
                            key = Some(row_key);
                        }
                        let mod_revision = c.next()?;
                        let create_revision = c.next()?;
                        let facts = Facts {
                            version: c.next()?,
                            deleted: c.next()?,
                            value_hash: c.next()?,
                            semantic_hash: c.next()?,
                            encoding: c.next()?,
                            api_version: c.next()?,
                            encryption: c.next()?,
                            fields: self.decode_fields(&c.packed()?, &paths)?,
                            hash_key: c.next()?,
                        };
                        self.check_encoding(facts.encoding.as_deref())?;
                        self.check_encryption(facts.encryption.as_deref())?;
                        history.push(Revision {
                            mod_revision,
                            create_revision,
                            facts,
                            pending: c.next()?,
                            managed: c.packed()?,
                        });
                    }
                    Ok(())
                },
            )?;
            classify(key, &mut history, &mut batch)?;
            self.write_classes(&mut batch)
        })?;
        Ok(stats)
    }
}
