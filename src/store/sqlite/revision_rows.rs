//! [`RevisionRows`] over the SQLite database: prepared statements, one
//! `BEGIN IMMEDIATE` transaction a batch.

use super::Store;
use crate::canon::facts::ObjectFacts;
use crate::canon::path::FieldPath;
use crate::decode::key::ParsedKey;
use crate::ingest::base::{Base, BaseBlob};
use crate::store::rows::{ContentRow, KeyId, RevisionRow, RevisionRows};
use crate::store::ClusterId;
use crate::store::StoreError;
use rusqlite::{params, params_from_iter, OptionalExtension, ToSql};
use std::path::Path;
use std::sync::LazyLock;

/// The statement that inserts a revision: its own columns, then its facts'.
static INSERT_REVISION: LazyLock<String> = LazyLock::new(|| {
    let columns: Vec<&str> = RevisionRow::COLUMNS
        .iter()
        .chain(&ObjectFacts::COLUMNS)
        .copied()
        .collect();
    let slots: Vec<String> = (1..=columns.len()).map(|i| format!("?{i}")).collect();
    format!(
        "INSERT INTO revisions ({}) VALUES ({})",
        columns.join(", "),
        slots.join(", ")
    )
});

/// The rows of one run, written through the store's connection.
pub(in crate::store) struct SqliteRows<'s> {
    pub store: &'s Store,
}

impl SqliteRows<'_> {
    fn sql(&self, e: rusqlite::Error) -> StoreError {
        self.store.err(e)
    }

    /// The base of the key's newest stored content.
    fn latest_base(&mut self, key_id: KeyId) -> Result<Option<Base>, StoreError> {
        self.store
            .conn
            .prepare_cached(
                "SELECT b.id, b.canonical, b.fields, b.managed FROM revisions r \
                 JOIN semantic_values s ON s.hash = r.semantic_sha256 \
                 JOIN semantic_values b ON b.id = coalesce(s.base, s.id) \
                 WHERE r.key_id = ?1 AND b.codec = 'zstd' ORDER BY r.mod_revision DESC LIMIT 1",
            )
            .and_then(|mut s| {
                s.query_row([key_id], |r| {
                    let blob = |i| -> rusqlite::Result<BaseBlob> {
                        Ok(BaseBlob::packed(
                            r.get::<_, Option<Vec<u8>>>(i)?.unwrap_or_default(),
                        ))
                    };
                    Ok(Base {
                        id: r.get(0)?,
                        canonical: blob(1)?,
                        fields: blob(2)?,
                        managed: blob(3)?,
                    })
                })
                .optional()
            })
            .map_err(|e| self.sql(e))
    }

    /// Inserts a content unless one with its hash is stored: the new row's
    /// id, `None` when it was there.
    fn insert_one_content(&mut self, c: &ContentRow<'_>) -> Result<Option<i64>, StoreError> {
        // One look-up of the hash: a content stored before is left as it is
        // (looking first took a second B-tree search for every new one).
        let inserted = self
            .store
            .conn
            .prepare_cached(
                "INSERT INTO semantic_values (hash, keyed, codec, base, canonical, fields, managed, redacted) \
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8) ON CONFLICT (hash) DO NOTHING",
            )
            .and_then(|mut st| {
                st.execute(params![
                    c.hash,
                    c.keyed,
                    c.codec,
                    c.base,
                    c.canonical,
                    c.fields,
                    c.managed,
                    c.redacted
                ])
            })
            .map_err(|e| self.sql(e))?;
        Ok((inserted > 0).then(|| self.store.conn.last_insert_rowid()))
    }
}

impl RevisionRows for SqliteRows<'_> {
    fn location(&self) -> &Path {
        &self.store.path
    }

    fn begin(&mut self) -> Result<(), StoreError> {
        self.store
            .conn
            .execute_batch("BEGIN IMMEDIATE")
            .map_err(|e| self.sql(e))
    }

    fn commit(&mut self) -> Result<(), StoreError> {
        self.store.conn.execute_batch("COMMIT").map_err(|e| self.sql(e))
    }

    fn rollback(&mut self) {
        if !self.store.conn.is_autocommit() {
            let _ = self.store.conn.execute_batch("ROLLBACK");
        }
    }

    fn key_id(
        &mut self,
        cluster: ClusterId,
        key: &[u8],
        names: Option<&ParsedKey>,
    ) -> Result<KeyId, StoreError> {
        let conn = &self.store.conn;
        let existing: Option<i64> = conn
            .prepare_cached("SELECT id FROM keys WHERE cluster_id = ?1 AND key = ?2")
            .and_then(|mut s| s.query_row(params![cluster, key], |r| r.get(0)).optional())
            .map_err(|e| self.sql(e))?;
        if let Some(id) = existing {
            return Ok(KeyId(id));
        }
        conn.prepare_cached(
            "INSERT INTO keys (cluster_id, key, api_group, resource, namespace, name) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
        )
        .and_then(|mut s| {
            s.execute(params![
                cluster,
                key,
                names.map(|p| p.group.as_str()),
                names.map(|p| p.resource.as_str()),
                names.and_then(|p| p.namespace.as_deref()),
                names.and_then(|p| p.name.as_deref()),
            ])
        })
        .map_err(|e| self.sql(e))?;
        Ok(KeyId(conn.last_insert_rowid()))
    }

    fn path_id(&mut self, path: &FieldPath) -> Result<i64, StoreError> {
        let conn = &self.store.conn;
        conn.prepare_cached("INSERT OR IGNORE INTO field_paths (path) VALUES (?1)")
            .and_then(|mut s| s.execute([path.as_str()]))
            .map_err(|e| self.sql(e))?;
        conn.prepare_cached("SELECT id FROM field_paths WHERE path = ?1")
            .and_then(|mut s| s.query_row([path.as_str()], |r| r.get(0)))
            .map_err(|e| self.sql(e))
    }

    fn insert_clock_mark(&mut self, cluster: ClusterId, revision: i64, at: &str) -> Result<(), StoreError> {
        self.store
            .conn
            .prepare_cached(
                "INSERT OR IGNORE INTO clock_marks (cluster_id, revision, at) VALUES (?1, ?2, ?3)",
            )
            .and_then(|mut s| s.execute(params![cluster, revision, at]))
            .map_err(|e| self.sql(e))?;
        Ok(())
    }

    fn stored_revisions(&mut self, revisions: &[(KeyId, i64)]) -> Result<Vec<bool>, StoreError> {
        let mut statement = self
            .store
            .conn
            .prepare_cached("SELECT 1 FROM revisions WHERE key_id = ?1 AND mod_revision = ?2")
            .map_err(|e| self.sql(e))?;
        revisions
            .iter()
            .map(|&(key_id, mod_revision)| statement.exists(params![key_id, mod_revision]))
            .collect::<rusqlite::Result<_>>()
            .map_err(|e| self.sql(e))
    }

    fn generation_before(&mut self, key_id: KeyId, mod_revision: i64) -> Result<Option<i64>, StoreError> {
        self.store
            .conn
            .prepare_cached(
                "SELECT create_revision FROM revisions WHERE key_id = ?1 AND mod_revision < ?2 \
                 ORDER BY mod_revision DESC LIMIT 1",
            )
            .and_then(|mut s| {
                s.query_row(params![key_id, mod_revision], |row| row.get(0))
                    .optional()
            })
            .map_err(|e| self.sql(e))
    }

    fn latest_bases(&mut self, key_ids: &[KeyId]) -> Result<Vec<Option<Base>>, StoreError> {
        key_ids.iter().map(|&id| self.latest_base(id)).collect()
    }

    fn insert_content(&mut self, c: &ContentRow<'_>) -> Result<(), StoreError> {
        self.insert_one_content(c).map(drop)
    }

    fn insert_contents(&mut self, contents: &[ContentRow<'_>]) -> Result<Vec<Option<i64>>, StoreError> {
        contents.iter().map(|c| self.insert_one_content(c)).collect()
    }

    fn insert_revision(&mut self, row: &RevisionRow<'_>) -> Result<(), StoreError> {
        let (r, d) = (row.record, row.described);
        let (value_sha256, value_hash) = (row.value_hash.map(|h| h.0), row.value_hash.map(|h| h.1));
        let own: [&dyn ToSql; RevisionRow::COLUMNS.len()] = [
            &row.key_id,
            &r.mod_revision,
            &row.create_revision,
            &r.version,
            &r.lease,
            &r.deleted,
            &row.value_size,
            &value_sha256,
            &value_hash,
            &d.encoding,
            &d.encryption,
            &d.api_version,
            &d.kind,
            &d.namespace,
            &d.name,
            &d.uid,
            &d.generation,
            &d.error,
            &row.run.0,
            &row.semantic_hash,
            &row.duplicates,
            &row.hash_key,
            &row.cluster,
        ];
        let facts = row.facts.stored();
        let values = own.into_iter().chain(facts.iter().map(|f| f as &dyn ToSql));
        self.store
            .conn
            .prepare_cached(&INSERT_REVISION)
            .and_then(|mut s| s.execute(params_from_iter(values)))
            .map_err(|e| self.sql(e))?;
        Ok(())
    }
}

/// A test's record of `object` as JSON under `key`, in generation
/// `create_revision`.
#[cfg(test)]
use crate::source::Record;

#[cfg(test)]
pub(in crate::store) fn test_record(
    key: &str,
    mod_revision: i64,
    create_revision: i64,
    object: &serde_json::Value,
) -> Record {
    Record {
        key: key.as_bytes().to_vec(),
        mod_revision,
        create_revision,
        version: mod_revision - create_revision + 1,
        lease: 0,
        value: serde_json::to_vec(object).unwrap(),
        deleted: false,
    }
}

/// A test's own run: every resource, the default field settings, a new
/// hash key; the cluster's row id, the run and the field settings.
#[cfg(test)]
pub(in crate::store) fn test_run(
    store: &Store,
) -> (
    crate::store::ClusterId,
    crate::store::RunId,
    crate::canon::semantic::FieldConfig,
) {
    let store: &dyn crate::store::RunRecorder = store;
    store.load_hash_key(&Default::default()).unwrap();
    let run = store
        .begin_run(crate::store::RunKind::Live, "test", "/registry/", "")
        .unwrap();
    let (cluster, _) = store.cluster("test", None).unwrap();
    (cluster, run, store.field_config(None, &[]).unwrap())
}

impl crate::store::recorder::RowWrites for Store {
    fn revision_rows(
        &self,
    ) -> Result<(Box<dyn RevisionRows + '_>, &crate::canon::keyed_hash::HashKey), StoreError> {
        Ok((
            Box::new(SqliteRows { store: self }),
            crate::store::recorder::HashKeyLoad::hash_key(self)?,
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lifecycle::RevisionWriter;
    use crate::store::reader::HistoryReads;

    use crate::source::{Record, Sink};

    use crate::decode::encode::encode_protobuf;
    use serde_json::json;

    fn pod(phase: &str) -> serde_json::Value {
        let env: Vec<_> = (0..30)
            .map(|e| json!({"name": format!("SETTING_{e}"), "value": format!("value-{e}-of-some-length")}))
            .collect();
        json!({"apiVersion": "v1", "kind": "Pod",
               "metadata": {"name": "web-1", "namespace": "shop", "uid": "u-1",
                            "managedFields": [{"manager": "kubelet", "operation": "Update", "apiVersion": "v1",
                                               "fieldsType": "FieldsV1", "fieldsV1": {"f:status": {"f:phase": {}}}}]},
               "spec": {"containers": [{"name": "web", "image": "nginx", "env": env}]},
               "status": {"phase": phase}})
    }

    /// Writes one revision of the Pod in a run of its own.
    fn write(store: &Store, revision: i64, phase: &str) {
        write_all(store, &[("/registry/pods/shop/web-1", revision, phase)]);
    }

    /// Writes revisions `(key, revision, phase)` of the Pod in one run.
    fn write_all(store: &Store, revisions: &[(&str, i64, &str)]) {
        let (cluster, run, fields) = test_run(store);
        let mut w = RevisionWriter::unfiltered(store, cluster, run, fields).unwrap();
        for &(key, revision, phase) in revisions {
            let record = Record {
                key: key.as_bytes().to_vec(),
                mod_revision: revision,
                create_revision: 2,
                version: revision - 1,
                lease: 0,
                value: encode_protobuf(&pod(phase)).unwrap(),
                deleted: false,
            };
            w.record(record).unwrap();
        }
        w.flush().unwrap();
    }

    /// `(id, base, hash)` of every stored content, in order.
    fn contents(store: &Store) -> Vec<(i64, Option<i64>, Vec<u8>)> {
        store
            .conn
            .prepare("SELECT id, base, hash FROM semantic_values ORDER BY id")
            .unwrap()
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap()
    }

    #[test]
    fn revisions_of_one_key_read_together_compress_against_the_first() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open_for_writing(&dir.path().join("db.sqlite")).unwrap();
        // Another key's revisions in between, as a source sends them.
        write_all(
            &store,
            &[
                ("/registry/pods/shop/web-1", 2, "Pending"),
                ("/registry/pods/shop/web-2", 3, "Pending"),
                ("/registry/pods/shop/web-1", 4, "Running"),
                ("/registry/pods/shop/web-2", 5, "Running"),
                ("/registry/pods/shop/web-1", 6, "Succeeded"),
            ],
        );
        let rows = contents(&store);
        // web-2's Pending equals web-1's (the Pod names itself web-1).
        assert_eq!(rows.len(), 3, "Pending, Running, Succeeded once each");
        assert_eq!(rows[0].1, None);
        assert_eq!(rows[1].1, Some(rows[0].0));
        assert_eq!(rows[2].1, Some(rows[0].0));
        for ((_, _, hash), phase) in rows.iter().zip(["Pending", "Running", "Succeeded"]) {
            assert_eq!(
                store.canonical_value(hash).unwrap().unwrap()["status"]["phase"],
                phase
            );
        }
    }

    #[test]
    fn a_key_whose_first_content_was_stored_before_stores_its_next_in_full() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open_for_writing(&dir.path().join("db.sqlite")).unwrap();
        write(&store, 2, "Pending");
        // The same value copied under another key, then changed there: its
        // first content is known, so it is no base for the next.
        write_all(
            &store,
            &[
                ("/registry/pods/shop/web-copy", 5, "Pending"),
                ("/registry/pods/shop/web-copy", 6, "Running"),
                ("/registry/pods/shop/web-copy", 7, "Succeeded"),
            ],
        );
        let rows = contents(&store);
        assert_eq!(rows.len(), 3);
        assert!(rows.iter().all(|(_, base, _)| base.is_none()), "{rows:?}");
        for ((_, _, hash), phase) in rows.iter().zip(["Pending", "Running", "Succeeded"]) {
            assert_eq!(
                store.canonical_value(hash).unwrap().unwrap()["status"]["phase"],
                phase
            );
        }
    }

    #[test]
    fn a_later_content_is_a_small_delta_against_the_base_an_earlier_run_stored() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open_for_writing(&dir.path().join("db.sqlite")).unwrap();
        for (revision, phase) in [(2, "Pending"), (3, "Running"), (4, "Succeeded")] {
            write(&store, revision, phase);
        }
        let rows: Vec<(i64, Option<i64>, usize, Vec<u8>)> = store
            .conn
            .prepare("SELECT id, base, length(canonical), hash FROM semantic_values ORDER BY id")
            .unwrap()
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        assert_eq!(rows.len(), 3);
        let (base_id, base_of_base, full, _) = &rows[0];
        assert_eq!(*base_of_base, None, "the first content is stored in full");
        for (phase, (_, base, size, hash)) in ["Running", "Succeeded"].iter().zip(&rows[1..]) {
            assert_eq!(
                base.as_ref(),
                Some(base_id),
                "compressed against the first content"
            );
            assert!(
                size * 5 < *full,
                "a phase change costs {size} bytes, the full content {full}"
            );
            let stored = store.canonical_value(hash).unwrap().unwrap();
            assert_eq!(stored["status"]["phase"], *phase);
            assert_eq!(stored["spec"]["containers"][0]["env"][29]["name"], "SETTING_29");
        }
    }
}
