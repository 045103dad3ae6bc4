//! [`RevisionRows`] written once over [`Sql`]. A run's revisions, contents
//! and (where the dialect takes key ids ahead) new keys are held in pages
//! of [`PAGE`] rows and go in through the backend's bulk path
//! ([`Sql::insert_rows`]: PostgreSQL's binary `COPY`, SQLite's prepared
//! `INSERT`). What the writer asks about keys this run created is answered
//! from memory; anything else is read for a window's keys at once, after
//! the held rows went in, so reads see every row written before them.

use super::recorder::{HashKeyLoad, RowWrites};
use super::rows::{ContentRow, KeyId, RevisionRow, RevisionRows};
use super::sql::{id_list, values, Sql, INSERTED_PER_STATEMENT};
use super::tables::Cell;
use super::{ClusterId, StoreError};
use crate::canon::facts::ObjectFacts;
use crate::canon::keyed_hash::HashKey;
use crate::canon::path::FieldPath;
use crate::decode::key::ParsedKey;
use crate::ingest::base::{Base, BaseBlob};
use crate::source::Revision;
use std::collections::{HashMap, HashSet};
use std::hash::{BuildHasher, BuildHasherDefault};
use std::path::Path;
use std::sync::LazyLock;

/// Rows held before they go in.
const PAGE: usize = 5000;
/// Keys whose stored revisions are remembered; past this, what is
/// remembered is dropped and read again when needed (bounds memory).
const KNOWN_KEYS: usize = 200_000;
/// Key ids taken ahead at a time.
const KEY_IDS: i64 = 1000;

/// The columns a revision fills: its own, then its facts'.
static REVISION_COLUMNS: LazyLock<Vec<&'static str>> = LazyLock::new(|| {
    RevisionRow::COLUMNS
        .iter()
        .chain(&ObjectFacts::COLUMNS)
        .copied()
        .collect()
});

/// The columns of a key taken ahead, in the order it is held.
const KEY_COLUMNS: [&str; 7] = [
    "id",
    "cluster_id",
    "key",
    "api_group",
    "resource",
    "namespace",
    "name",
];

/// What a key's name tells, as the cells of its last four columns.
fn name_cells(names: Option<&ParsedKey>) -> [Cell; 4] {
    let text = |t: Option<&str>| t.map_or(Cell::Null, |t| Cell::Text(t.to_string()));
    [
        text(names.map(|p| p.group.as_str())),
        text(names.map(|p| p.resource.as_str())),
        text(names.and_then(|p| p.namespace.as_deref())),
        text(names.and_then(|p| p.name.as_deref())),
    ]
}

/// What this run knows of a key without asking the database.
#[derive(Default)]
struct KnownKey {
    /// Every stored revision of the key, when all are known.
    revisions: HashSet<Revision>,
    /// The newest stored revision and its generation.
    newest: Option<(Revision, Revision)>,
}

/// The rows of one run.
struct SqlRows<'s, T: ?Sized> {
    sql: &'s T,
    /// Revisions held for the next page, as cells of [`REVISION_COLUMNS`].
    revisions: Vec<Cell>,
    /// Contents held likewise: those the writer needs no answer about (it
    /// only ever compresses against a content stored in full, answered at
    /// once by [`RevisionRows::insert_contents`]).
    contents: Vec<Cell>,
    /// Their hashes.
    content_hashes: HashSet<Vec<u8>>,
    /// Keys held likewise (cells of [`KEY_COLUMNS`]), and their ids by name.
    keys: Vec<Cell>,
    key_names: HashMap<(ClusterId, Vec<u8>), KeyId>,
    /// Per cluster: whether it held no keys when this run began, so that a
    /// key this run has not inserted is new without asking (the cluster's
    /// lock keeps other runs out).
    fresh: HashMap<ClusterId, bool>,
    /// Hashes of the keys this run inserted into fresh clusters.
    inserted_keys: HashSet<u64>,
    /// Key ids taken ahead, not used yet.
    key_ids: Vec<i64>,
    /// Keys whose stored revisions are all known: those this run created,
    /// and those read once.
    known: HashMap<KeyId, KnownKey>,
}

impl<'s, T: Sql + ?Sized> SqlRows<'s, T> {
    fn new(sql: &'s T) -> Self {
        SqlRows {
            sql,
            revisions: Vec::new(),
            contents: Vec::new(),
            content_hashes: HashSet::new(),
            keys: Vec::new(),
            key_names: HashMap::new(),
            fresh: HashMap::new(),
            inserted_keys: HashSet::new(),
            key_ids: Vec::new(),
            known: HashMap::new(),
        }
    }

    /// An integer `column` of `table` read back.
    fn int(&self, table: &str, cell: &Cell, column: &str) -> Result<i64, StoreError> {
        self.sql.typed(table).int(cell, column)
    }

    /// A revision `column` of `table` read back.
    fn revision(&self, table: &str, cell: &Cell, column: &str) -> Result<Revision, StoreError> {
        self.int(table, cell, column).map(Revision)
    }

    /// Puts the held keys, contents and revisions in.
    fn put_held(&mut self) -> Result<(), StoreError> {
        self.put_keys()?;
        self.put_contents()?;
        self.sql
            .insert_rows("revisions", &REVISION_COLUMNS, &self.revisions)?;
        self.revisions.clear();
        Ok(())
    }

    fn put_keys(&mut self) -> Result<(), StoreError> {
        self.sql.insert_rows("keys", &KEY_COLUMNS, &self.keys)?;
        self.keys.clear();
        self.key_names.clear();
        Ok(())
    }

    /// Puts the held contents in, each unless another run stored its hash
    /// meanwhile.
    fn put_contents(&mut self) -> Result<(), StoreError> {
        self.sql
            .insert_new_rows("semantic_values", &ContentRow::COLUMNS, &["hash"], &self.contents)?;
        self.contents.clear();
        self.content_hashes.clear();
        Ok(())
    }

    /// Remembers a key that has no stored revision.
    fn remember_new(&mut self, id: KeyId) {
        if self.known.len() >= KNOWN_KEYS {
            self.known.clear();
        }
        self.known.insert(id, KnownKey::default());
    }

    /// A key id taken ahead, [`KEY_IDS`] at a time.
    fn next_key_id(&mut self, statement: &str) -> Result<KeyId, StoreError> {
        if self.key_ids.is_empty() {
            let rows = self.sql.rows_prepared("keys", statement, &[Cell::Int(KEY_IDS)])?;
            for row in &rows {
                let id = self.int("keys", &row[0], "id")?;
                self.key_ids.push(id);
            }
        }
        match self.key_ids.pop() {
            Some(id) => Ok(KeyId(id)),
            None => Err(self
                .sql
                .typed("keys")
                .damage("id", "no ids were taken for new keys")),
        }
    }

    /// Whether `cluster` held no keys when this run first asked.
    fn fresh(&mut self, cluster: ClusterId) -> Result<bool, StoreError> {
        if let Some(&fresh) = self.fresh.get(&cluster) {
            return Ok(fresh);
        }
        let fresh = self
            .sql
            .rows(
                "keys",
                "SELECT 1 FROM keys WHERE cluster_id = $1 LIMIT 1",
                &[cluster.into()],
            )?
            .is_empty();
        self.fresh.insert(cluster, fresh);
        Ok(fresh)
    }

    /// The id of a key of a fresh cluster this run has not inserted, taken
    /// ahead and held for the next page; `None` when this run may have
    /// inserted it.
    fn new_key(
        &mut self,
        statement: &str,
        cluster: ClusterId,
        key: &[u8],
        names: Option<&ParsedKey>,
    ) -> Result<Option<KeyId>, StoreError> {
        if let Some(&id) = self.key_names.get(&(cluster, key.to_vec())) {
            return Ok(Some(id));
        }
        let hash = BuildHasherDefault::<std::collections::hash_map::DefaultHasher>::default()
            .hash_one((cluster, key));
        if !self.inserted_keys.insert(hash) {
            // Inserted before by this run (or a hash shared with one that
            // was): the database knows.
            self.put_keys()?;
            return Ok(None);
        }
        let id = self.next_key_id(statement)?;
        self.keys
            .extend([id.into(), cluster.into(), Cell::Bytes(key.to_vec())]);
        self.keys.extend(name_cells(names));
        self.key_names.insert((cluster, key.to_vec()), id);
        self.remember_new(id);
        if self.key_names.len() >= PAGE {
            self.put_keys()?;
        }
        Ok(Some(id))
    }

    /// The id of the key `cluster` stores under `key`, if any.
    fn stored_key(&self, cluster: ClusterId, key: &[u8]) -> Result<Option<KeyId>, StoreError> {
        let rows = self.sql.rows_prepared(
            "keys",
            "SELECT id FROM keys WHERE cluster_id = $1 AND key = $2",
            &[cluster.into(), Cell::Bytes(key.to_vec())],
        )?;
        rows.first()
            .map(|row| Ok(KeyId(self.int("keys", &row[0], "id")?)))
            .transpose()
    }

    /// Remembers the keys of `key_ids` not remembered yet, reading their
    /// stored revisions together.
    fn load_known(&mut self, key_ids: &[KeyId]) -> Result<(), StoreError> {
        let mut asked: Vec<i64> = key_ids
            .iter()
            .filter(|k| !self.known.contains_key(k))
            .map(|k| k.0)
            .collect();
        asked.sort_unstable();
        asked.dedup();
        if asked.is_empty() {
            return Ok(());
        }
        if self.known.len() + asked.len() > KNOWN_KEYS {
            self.known.clear();
        }
        self.put_held()?;
        let rows = self.sql.rows_prepared(
            "revisions",
            &format!(
                "SELECT key_id, mod_revision, create_revision FROM revisions WHERE key_id IN {} \
                 ORDER BY key_id, mod_revision",
                self.sql.dialect().id_list
            ),
            &[id_list(&asked)],
        )?;
        for id in asked {
            self.known.insert(KeyId(id), KnownKey::default());
        }
        for row in rows {
            let key_id = KeyId(self.int("revisions", &row[0], "key_id")?);
            let revision = self.revision("revisions", &row[1], "mod_revision")?;
            let generation = self.revision("revisions", &row[2], "create_revision")?;
            if let Some(k) = self.known.get_mut(&key_id) {
                k.revisions.insert(revision);
                k.newest = Some((revision, generation));
            }
        }
        Ok(())
    }
}

impl<T: Sql + ?Sized> RevisionRows for SqlRows<'_, T> {
    fn location(&self) -> &Path {
        self.sql.location()
    }

    fn begin(&mut self) -> Result<(), StoreError> {
        self.sql.begin_transaction()
    }

    fn commit(&mut self) -> Result<(), StoreError> {
        self.put_held()?;
        self.sql.commit_transaction()
    }

    fn rollback(&mut self) {
        self.revisions.clear();
        self.contents.clear();
        self.content_hashes.clear();
        self.keys.clear();
        self.key_names.clear();
        // Keys rolled back are new again; the cluster may hold others now.
        self.inserted_keys.clear();
        self.fresh.clear();
        // What was remembered may be rolled back with it.
        self.known.clear();
        self.sql.rollback_transaction();
    }

    fn key_id(
        &mut self,
        cluster: ClusterId,
        key: &[u8],
        names: Option<&ParsedKey>,
    ) -> Result<KeyId, StoreError> {
        if let Some(statement) = self.sql.dialect().new_key_ids {
            if self.fresh(cluster)? {
                if let Some(id) = self.new_key(statement, cluster, key, names)? {
                    return Ok(id);
                }
            }
        }
        if let Some(id) = self.stored_key(cluster, key)? {
            return Ok(id);
        }
        let mut params = vec![cluster.into(), Cell::Bytes(key.to_vec())];
        params.extend(name_cells(names));
        let inserted = self.sql.rows_prepared(
            "keys",
            "INSERT INTO keys (cluster_id, key, api_group, resource, namespace, name) \
             VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (cluster_id, key) DO NOTHING RETURNING id",
            &params,
        )?;
        let Some(row) = inserted.first() else {
            // Inserted meanwhile by another writer.
            return self.stored_key(cluster, key)?.ok_or_else(|| {
                self.sql
                    .typed("keys")
                    .damage("key", "a key that conflicted on insert is not there")
            });
        };
        let id = KeyId(self.int("keys", &row[0], "id")?);
        self.remember_new(id);
        Ok(id)
    }

    fn path_id(&mut self, path: &FieldPath) -> Result<i64, StoreError> {
        let path = [Cell::Text(path.as_str().to_string())];
        let inserted = self.sql.rows_prepared(
            "field_paths",
            "INSERT INTO field_paths (path) VALUES ($1) ON CONFLICT (path) DO NOTHING RETURNING id",
            &path,
        )?;
        let stored;
        let row = match inserted.first() {
            Some(row) => row,
            None => {
                stored = self.sql.rows_prepared(
                    "field_paths",
                    "SELECT id FROM field_paths WHERE path = $1",
                    &path,
                )?;
                stored.first().ok_or_else(|| {
                    self.sql
                        .typed("field_paths")
                        .damage("path", "a path that conflicted on insert is not there")
                })?
            }
        };
        self.int("field_paths", &row[0], "id")
    }

    fn stored_revisions(&mut self, revisions: &[(KeyId, Revision)]) -> Result<Vec<bool>, StoreError> {
        let keys: Vec<KeyId> = revisions.iter().map(|&(k, _)| k).collect();
        self.load_known(&keys)?;
        Ok(revisions
            .iter()
            .map(|(k, r)| self.known.get(k).is_some_and(|known| known.revisions.contains(r)))
            .collect())
    }

    fn generation_before(
        &mut self,
        key_id: KeyId,
        mod_revision: Revision,
    ) -> Result<Option<Revision>, StoreError> {
        self.load_known(&[key_id])?;
        if let Some((newest, generation)) = self.known.get(&key_id).and_then(|k| k.newest) {
            if newest < mod_revision {
                return Ok(Some(generation));
            }
        }
        self.put_held()?;
        let rows = self.sql.rows_prepared(
            "revisions",
            "SELECT create_revision FROM revisions WHERE key_id = $1 AND mod_revision < $2 \
             ORDER BY mod_revision DESC LIMIT 1",
            &[key_id.into(), mod_revision.into()],
        )?;
        rows.first()
            .map(|row| self.revision("revisions", &row[0], "create_revision"))
            .transpose()
    }

    fn latest_bases(&mut self, key_ids: &[KeyId]) -> Result<Vec<Option<Base>>, StoreError> {
        // A key with no stored revision has none.
        let asked: Vec<i64> = key_ids
            .iter()
            .filter(|k| self.known.get(k).is_none_or(|known| known.newest.is_some()))
            .map(|k| k.0)
            .collect();
        if asked.is_empty() {
            return Ok(key_ids.iter().map(|_| None).collect());
        }
        self.put_held()?;
        // Each key's newest revision whose content's base is stored in
        // full, read through the key's revisions newest first.
        let rows = self.sql.rows_prepared(
            "semantic_values",
            &format!(
                "SELECT l.key_id, b.id, b.canonical, b.fields, b.managed FROM \
                 (SELECT k.id AS key_id, (SELECT f.id FROM revisions r \
                    JOIN semantic_values s ON s.hash = r.semantic_sha256 \
                    JOIN semantic_values f ON f.id = coalesce(s.base, s.id) \
                    WHERE r.key_id = k.id AND f.codec = 'zstd' ORDER BY r.mod_revision DESC LIMIT 1) AS base \
                  FROM keys k WHERE k.id IN {}) l \
                 JOIN semantic_values b ON b.id = l.base",
                self.sql.dialect().id_list
            ),
            &[id_list(&asked)],
        )?;
        let mut bases = HashMap::with_capacity(rows.len());
        let typed = self.sql.typed("semantic_values");
        for mut row in rows {
            let key = KeyId(typed.int(&row[0], "keys.id")?);
            let id = typed.int(&row[1], "id")?;
            let mut blob = |i: usize, column: &str| match std::mem::take(&mut row[i]) {
                Cell::Null => Ok(BaseBlob::packed(Vec::new())),
                Cell::Bytes(b) => Ok(BaseBlob::packed(b)),
                other => Err(typed.damage(column, format_args!("{other:?} is not a blob"))),
            };
            let base = Base {
                id,
                canonical: blob(2, "canonical")?,
                fields: blob(3, "fields")?,
                managed: blob(4, "managed")?,
            };
            bases.insert(key, base);
        }
        Ok(key_ids.iter().map(|k| bases.remove(k)).collect())
    }

    fn insert_content(&mut self, c: &ContentRow<'_>) -> Result<(), StoreError> {
        self.content_hashes.insert(c.hash.to_vec());
        c.cells(&mut self.contents);
        if self.content_hashes.len() >= PAGE {
            self.put_contents()?;
        }
        Ok(())
    }

    fn insert_contents(&mut self, contents: &[ContentRow<'_>]) -> Result<Vec<Option<i64>>, StoreError> {
        // A content held for the next page comes first, as it would have
        // been inserted first; of a hash repeated, the first is stored.
        let mut ids: HashMap<Vec<u8>, i64> = HashMap::new();
        let asked: Vec<&ContentRow<'_>> = contents
            .iter()
            .filter(|c| !self.content_hashes.contains(c.hash))
            .collect();
        for chunk in asked.chunks(INSERTED_PER_STATEMENT) {
            let mut cells = Vec::with_capacity(chunk.len() * ContentRow::COLUMNS.len());
            for c in chunk {
                c.cells(&mut cells);
            }
            let rows = self.sql.rows(
                "semantic_values",
                &format!(
                    "INSERT INTO semantic_values ({}) VALUES {} ON CONFLICT (hash) DO NOTHING RETURNING hash, id",
                    ContentRow::COLUMNS.join(", "),
                    values(ContentRow::COLUMNS.len(), chunk.len(), None)
                ),
                &cells,
            )?;
            for mut row in rows {
                let id = self.int("semantic_values", &row[1], "id")?;
                if let Cell::Bytes(hash) = std::mem::take(&mut row[0]) {
                    ids.insert(hash, id);
                }
            }
        }
        Ok(contents
            .iter()
            .map(|c| match self.content_hashes.contains(c.hash) {
                true => None,
                false => ids.remove(c.hash),
            })
            .collect())
    }

    fn insert_revision(&mut self, row: &RevisionRow<'_>) -> Result<(), StoreError> {
        let r = row.record;
        // A key not remembered is read whole when next asked about.
        if let Some(known) = self.known.get_mut(&row.key_id) {
            known.revisions.insert(r.mod_revision);
            if known.newest.is_none_or(|(newest, _)| newest < r.mod_revision) {
                known.newest = Some((r.mod_revision, row.create_revision));
            }
        }
        row.cells(&mut self.revisions);
        if self.revisions.len() >= PAGE * REVISION_COLUMNS.len() {
            self.put_held()?;
        }
        Ok(())
    }

    fn insert_clock_mark(
        &mut self,
        cluster: ClusterId,
        revision: Revision,
        at: &str,
    ) -> Result<(), StoreError> {
        self.sql.execute(
            "INSERT INTO clock_marks (cluster_id, revision, at) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING",
            &[cluster.into(), revision.into(), Cell::Text(at.to_string())],
        )?;
        Ok(())
    }
}

impl<T: Sql + HashKeyLoad + ?Sized> RowWrites for T {
    fn revision_rows(&self) -> Result<(Box<dyn RevisionRows + '_>, &HashKey), StoreError> {
        Ok((Box::new(SqlRows::new(self)), self.hash_key()?))
    }
}

#[cfg(test)]
mod tests {
    use crate::lifecycle::RevisionWriter;
    use crate::store::reader::HistoryReads;
    use crate::store::sqlite::{test_run, Store};

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
                mod_revision: crate::source::Revision(revision),
                create_revision: crate::source::Revision(2),
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
