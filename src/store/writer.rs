//! Writes records into the database: each `(key, mod_revision)` once, with
//! what decoding its value tells (encoding, apiVersion, kind, uid, ...), its
//! semantic hash, and each distinct semantic content once (compressed
//! canonical JSON and field hashes), in batched transactions. Values are
//! decoded in chunks on worker threads ([`super::pipeline`]) while this
//! thread inserts the chunks before them in order.

use super::base::{Base, BaseBlob, Bases};
use super::blob::{pack, repack_without, ZSTD};
use super::pipeline::{Chunk, Pipeline};
use super::prepare::{Against, KeyInfo, PlainBlobs, Prepared, Semantic};
use super::{RunId, Store, StoreError};
use crate::canon::keyed_hash::HashKind;
use crate::canon::path::FieldPath;
use crate::canon::semantic::FieldConfig;
use crate::decode::key::parse_key;
use crate::decrypt::Decryptor;
use crate::source::filter::ResourceFilter;
use crate::source::{Record, Sink};
use rusqlite::{params, OptionalExtension};
use std::collections::{HashMap, HashSet};
use std::sync::Arc;

/// Records decoded together on the worker threads (a chunk ends at the
/// end of a key's revisions past this).
const CHUNK: usize = 256;
/// Revisions written per transaction: at least [`BATCH`], more while the
/// transaction is younger than [`BATCH_TIME`] (a bulk read commits less
/// often: on a 714 MiB file, 8.7 s took 7.5 s), at most [`BATCH_MAX`].
const BATCH: usize = 2000;
const BATCH_MAX: usize = 50_000;
const BATCH_TIME: std::time::Duration = std::time::Duration::from_secs(1);
/// Key ids cached before the cache is dropped (bounds memory).
const KEY_CACHE: usize = 200_000;

/// A [`Sink`] that stores records for one run of one cluster.
pub struct RevisionWriter<'s> {
    store: &'s Store,
    cluster: i64,
    run: RunId,
    prefix: String,
    filter: ResourceFilter,
    /// Records that are not stored yet, sent to the workers in key order
    /// once they fill a chunk and the next record's key is another.
    window: Vec<(Record, KeyInfo)>,
    /// `(key id, mod_revision)` of records pending or in flight, so a
    /// revision the source sends twice (state and history) is stored once.
    pending_ids: HashSet<(i64, i64)>,
    pipeline: Pipeline,
    /// Records since the open transaction began; 0 when none is open.
    in_batch: usize,
    /// When it began.
    batch_began: std::time::Instant,
    key_ids: HashMap<Vec<u8>, KeyInfo>,
    path_ids: HashMap<FieldPath, i64>,
    bases: Bases,
    /// Revisions this writer stored that were not stored before.
    pub added: i64,
    /// The id of the key keyed hashes are taken with, recorded with each
    /// revision that holds one.
    hash_key: String,
    decryptor: Option<Arc<Decryptor>>,
}

impl<'s> RevisionWriter<'s> {
    pub fn new(
        store: &'s Store,
        cluster: i64,
        run: RunId,
        prefix: &str,
        fields: FieldConfig,
        filter: ResourceFilter,
        decryptor: Option<Arc<Decryptor>>,
    ) -> Result<Self, StoreError> {
        let key = store.hash_key()?;
        Ok(RevisionWriter {
            hash_key: key.id(),
            store,
            cluster,
            run,
            prefix: prefix.to_string(),
            filter,
            window: Vec::new(),
            pending_ids: HashSet::new(),
            pipeline: super::pipeline::start(&fields, &key.hasher(), decryptor.clone()),
            decryptor,
            in_batch: 0,
            batch_began: std::time::Instant::now(),
            key_ids: HashMap::new(),
            path_ids: HashMap::new(),
            bases: Bases::default(),
            added: 0,
        })
    }

    fn sql(&self, e: rusqlite::Error) -> StoreError {
        self.store.err(e)
    }

    /// The key's row (inserted if new) and what its name tells.
    fn key_info(&mut self, key: &[u8]) -> Result<KeyInfo, StoreError> {
        if let Some(&cached) = self.key_ids.get(key) {
            return Ok(cached);
        }
        let parsed = parse_key(&String::from_utf8_lossy(key), &self.prefix).ok();
        if parsed.as_ref().is_some_and(|p| !self.filter.records(p)) {
            let info = KeyInfo {
                excluded: true,
                ..KeyInfo::new(0, parsed.as_ref(), None)
            };
            self.cache_key(key, info);
            return Ok(info);
        }
        let conn = &self.store.conn;
        let existing: Option<i64> = conn
            .prepare_cached("SELECT id FROM keys WHERE cluster_id = ?1 AND key = ?2")
            .and_then(|mut s| s.query_row(params![self.cluster, key], |r| r.get(0)).optional())
            .map_err(|e| self.sql(e))?;
        let id = match existing {
            Some(id) => id,
            None => {
                let p = parsed.as_ref();
                conn.prepare_cached(
                    "INSERT INTO keys (cluster_id, key, api_group, resource, namespace, name) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                )
                .and_then(|mut s| {
                    s.execute(params![
                        self.cluster,
                        key,
                        p.map(|p| p.group.as_str()),
                        p.map(|p| p.resource.as_str()),
                        p.and_then(|p| p.namespace.as_deref()),
                        p.and_then(|p| p.name.as_deref()),
                    ])
                })
                .map_err(|e| self.sql(e))?;
                conn.last_insert_rowid()
            }
        };
        let info = KeyInfo::new(id, parsed.as_ref(), self.decryptor.as_deref());
        self.cache_key(key, info);
        Ok(info)
    }

    fn cache_key(&mut self, key: &[u8], info: KeyInfo) {
        if self.key_ids.len() >= KEY_CACHE {
            self.key_ids.clear();
        }
        self.key_ids.insert(key.to_vec(), info);
    }

    fn path_id(&mut self, path: &FieldPath) -> Result<i64, StoreError> {
        if let Some(&id) = self.path_ids.get(path) {
            return Ok(id);
        }
        let conn = &self.store.conn;
        conn.prepare_cached("INSERT OR IGNORE INTO field_paths (path) VALUES (?1)")
            .and_then(|mut s| s.execute([path.as_str()]))
            .map_err(|e| self.sql(e))?;
        let id = conn
            .prepare_cached("SELECT id FROM field_paths WHERE path = ?1")
            .and_then(|mut s| s.query_row([path.as_str()], |r| r.get(0)))
            .map_err(|e| self.sql(e))?;
        self.path_ids.insert(path.clone(), id);
        Ok(id)
    }

    /// Stores the semantic content once: compressed against the key's base
    /// when the record had one, or against the revision before it in its
    /// chunk (`chunk`, which storing a content in full sets), else in full,
    /// becoming the key's base.
    fn store_semantic(
        &mut self,
        key_id: i64,
        s: Semantic,
        chunk: &mut Option<ChunkBase>,
    ) -> Result<(), StoreError> {
        let mut ids = Vec::with_capacity(s.fields.len());
        for (path, h) in &s.fields {
            ids.push((self.path_id(path)?, h));
        }
        let fields = super::field_blob::encode(ids);
        let (mut canonical, mut managed) = (s.canonical, s.managed);
        let (base_id, fields_dict): (Option<i64>, &[u8]) = match (&s.against, &*chunk) {
            (Against::Nothing, _) => (None, &[]),
            (Against::Stored(b), _) => (Some(b.id), b.fields.bytes()),
            (Against::Chunk, Some(c)) if c.key_id == key_id => match &c.stored {
                Some((id, fields)) => (Some(*id), fields),
                // Its dictionary's content was stored before, not as this
                // key's base: store this one in full instead.
                None => {
                    let repack =
                        |b: Option<Vec<u8>>, dict: &[u8]| b.map(|b| repack_without(&b, dict)).transpose();
                    let io = |source| StoreError::Io {
                        path: self.store.path.clone(),
                        source,
                    };
                    canonical = repack(canonical, &c.plain.canonical).map_err(io)?;
                    managed = repack(managed, &c.plain.managed).map_err(io)?;
                    (None, &[])
                }
            },
            (Against::Chunk, _) => {
                return Err(StoreError::WorkerPanicked {
                    path: self.store.path.clone(),
                    message: "a revision was compressed against one its chunk does not hold".into(),
                })
            }
        };
        let packed_fields = pack(&fields, fields_dict);
        // One look-up of the hash: a content stored before is left as it is
        // (looking first took a second B-tree search for every new one).
        let inserted = self
            .store
            .conn
            .prepare_cached(
                "INSERT INTO semantic_values (hash, keyed, codec, base, canonical, fields, managed) \
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7) ON CONFLICT (hash) DO NOTHING",
            )
            .and_then(|mut st| {
                st.execute(params![
                    s.hash,
                    s.keyed,
                    ZSTD,
                    base_id,
                    canonical,
                    packed_fields,
                    managed
                ])
            })
            .map_err(|e| self.sql(e))?;
        if inserted == 0 {
            if let (Against::Nothing, Some(plain)) = (&s.against, s.plain) {
                *chunk = Some(ChunkBase {
                    key_id,
                    stored: None,
                    plain,
                });
            }
            return Ok(());
        }
        if let (Against::Nothing, Some(plain)) = (&s.against, s.plain) {
            let id = self.store.conn.last_insert_rowid();
            let base = Base {
                id,
                canonical: BaseBlob::plain(plain.canonical.clone()),
                fields: BaseBlob::plain(fields.clone()),
                managed: BaseBlob::plain(plain.managed.clone()),
            };
            self.bases.insert(key_id, base);
            *chunk = Some(ChunkBase {
                key_id,
                stored: Some((id, fields)),
                plain,
            });
        }
        Ok(())
    }

    /// Inserts one prepared revision.
    fn store_revision(&mut self, mut p: Prepared, chunk: &mut Option<ChunkBase>) -> Result<(), StoreError> {
        let semantic_hash = p.semantic.as_ref().map(|s| s.hash.clone());
        let keyed = p.semantic.as_ref().is_some_and(|s| s.keyed)
            || p.value_hash
                .as_ref()
                .is_some_and(|h| h.1 == HashKind::HmacSha256.as_str());
        if let Some(s) = p.semantic.take() {
            self.store_semantic(p.key.id, s, chunk)?;
        }
        let r = &p.record;
        let conn = &self.store.conn;
        // A tombstone read from a file carries only its key: it ends the
        // generation of the key's previous revision.
        let create_revision = if r.deleted && r.create_revision == 0 {
            conn.prepare_cached(
                "SELECT create_revision FROM revisions WHERE key_id = ?1 AND mod_revision < ?2 \
                 ORDER BY mod_revision DESC LIMIT 1",
            )
            .and_then(|mut s| {
                s.query_row(params![p.key.id, r.mod_revision], |row| row.get(0))
                    .optional()
            })
            .map_err(|e| self.sql(e))?
            .unwrap_or(0)
        } else {
            r.create_revision
        };
        let (d, f) = (&p.described, &p.facts);
        conn.prepare_cached(
            "INSERT INTO revisions (key_id, mod_revision, create_revision, version, lease, deleted, value_size, value_sha256, \
             value_hash, encoding, encryption, api_version, kind, namespace, name, uid, generation, decode_error, run_id, \
             semantic_sha256, owner_kind, owner_name, owner_uid, generate_name, spec_hash, creation_timestamp, \
             deletion_timestamp, phase, node, desired, managers, duplicates, observed_generation, finalizers, owner_refs, written_at, \
             hash_key) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, ?20, \
             ?21, ?22, ?23, ?24, ?25, ?26, ?27, ?28, ?29, ?30, ?31, ?32, ?33, ?34, ?35, ?36, ?37)",
        )
        .and_then(|mut s| {
            s.execute(params![
                p.key.id,
                r.mod_revision,
                create_revision,
                r.version,
                r.lease,
                r.deleted,
                p.value_size as i64,
                p.value_hash.as_ref().map(|h| &h.0),
                p.value_hash.as_ref().map(|h| h.1),
                d.encoding,
                d.encryption,
                d.api_version,
                d.kind,
                d.namespace,
                d.name,
                d.uid,
                d.generation,
                d.error,
                self.run.0,
                semantic_hash,
                f.owner_kind,
                f.owner_name,
                f.owner_uid,
                f.generate_name,
                f.spec_hash,
                f.creation_timestamp,
                f.deletion_timestamp,
                f.phase,
                f.node,
                f.desired,
                f.managers,
                p.duplicates,
                f.observed_generation,
                f.finalizers,
                f.owner_refs,
                f.written_at,
                keyed.then_some(&self.hash_key),
            ])
        })
        .map_err(|e| self.sql(e))?;
        self.added += 1;
        Ok(())
    }

    /// Inserts one chunk the workers prepared, inside a transaction.
    fn store_chunk(&mut self, done: Result<Vec<Prepared>, String>) -> Result<(), StoreError> {
        let chunk = done.map_err(|message| StoreError::WorkerPanicked {
            path: self.store.path.clone(),
            message,
        })?;
        self.begin_if_needed()?;
        self.in_batch = self.in_batch.max(1);
        let mut base = None;
        for prepared in chunk {
            self.pending_ids
                .remove(&(prepared.key.id, prepared.record.mod_revision));
            self.store_revision(prepared, &mut base)?;
        }
        Ok(())
    }

    /// Inserts the chunks the workers have ready.
    fn store_ready(&mut self) -> Result<(), StoreError> {
        while let Some(done) = self.pipeline.next(false) {
            self.store_chunk(done)?;
        }
        Ok(())
    }

    /// Sorts the window's records by key and sends them to the workers in
    /// chunks that keep each key's revisions together, each with its key's
    /// base.
    fn send_window(&mut self) -> Result<(), StoreError> {
        let mut window = std::mem::take(&mut self.window);
        window.sort_by_key(|(r, k)| (k.id, r.mod_revision));
        let mut chunk: Chunk = Vec::with_capacity(CHUNK);
        for (record, key) in window {
            // A key with very many revisions still spreads over the workers.
            let starts_key = chunk.last().is_none_or(|(_, k, _)| k.id != key.id);
            if (starts_key && chunk.len() >= CHUNK) || chunk.len() >= 8 * CHUNK {
                self.send_chunk(std::mem::replace(&mut chunk, Vec::with_capacity(CHUNK)))?;
            }
            let base = match (record.deleted, chunk.last()) {
                (true, _) => None,
                (false, Some((r, k, base))) if k.id == key.id && !r.deleted => base.clone(),
                (false, _) => self
                    .bases
                    .find(&self.store.conn, key.id)
                    .map_err(|e| self.sql(e))?,
            };
            chunk.push((record, key, base));
        }
        if !chunk.is_empty() {
            self.send_chunk(chunk)?;
        }
        Ok(())
    }

    /// Sends a chunk to the workers and inserts the chunks that are ready,
    /// waiting while too many are in flight (bounding memory).
    fn send_chunk(&mut self, chunk: Chunk) -> Result<(), StoreError> {
        self.pipeline.send(chunk);
        self.store_ready()?;
        while self.pipeline.in_flight() > self.pipeline.capacity() {
            if let Some(done) = self.pipeline.next(true) {
                self.store_chunk(done)?;
            }
        }
        Ok(())
    }

    fn begin_if_needed(&mut self) -> Result<(), StoreError> {
        if self.in_batch == 0 {
            self.store
                .conn
                .execute_batch("BEGIN IMMEDIATE")
                .map_err(|e| self.sql(e))?;
            self.batch_began = std::time::Instant::now();
        }
        Ok(())
    }

    /// Commits what is written so far (records still decoding go into the
    /// next transaction).
    fn commit(&mut self) -> Result<(), StoreError> {
        if self.in_batch > 0 {
            self.store.conn.execute_batch("COMMIT").map_err(|e| self.sql(e))?;
            self.in_batch = 0;
        }
        Ok(())
    }

    /// Stores every record received so far and commits.
    pub fn flush(&mut self) -> Result<(), StoreError> {
        self.send_window()?;
        while let Some(done) = self.pipeline.next(true) {
            self.store_chunk(done)?;
        }
        self.commit()
    }

    /// Drops the pending records and the open batch (the run stops; nothing
    /// half-written remains).
    pub fn abort(&mut self) {
        self.window.clear();
        self.pipeline.discard();
        self.pending_ids.clear();
        if self.in_batch > 0 {
            let _ = self.store.conn.execute_batch("ROLLBACK");
            self.in_batch = 0;
        }
    }
}

/// The revision a chunk stored in full last, which the revisions after it
/// of the same key in the chunk are compressed against.
pub(super) struct ChunkBase {
    key_id: i64,
    /// Its row and plain field blob, when this writer inserted it.
    stored: Option<(i64, Vec<u8>)>,
    plain: Arc<PlainBlobs>,
}

impl Drop for RevisionWriter<'_> {
    /// A writer dropped mid-batch (the run was interrupted or failed) rolls
    /// the batch back: the database keeps only whole batches.
    fn drop(&mut self) {
        self.abort();
    }
}

impl Sink for RevisionWriter<'_> {
    type Error = StoreError;

    fn record(&mut self, r: Record) -> Result<bool, StoreError> {
        self.begin_if_needed()?;
        self.in_batch += 1;
        let key = self.key_info(&r.key)?;
        if key.excluded {
            return Ok(true);
        }
        let known = self.pending_ids.contains(&(key.id, r.mod_revision))
            || self
                .store
                .conn
                .prepare_cached("SELECT 1 FROM revisions WHERE key_id = ?1 AND mod_revision = ?2")
                .and_then(|mut s| s.exists(params![key.id, r.mod_revision]))
                .map_err(|e| self.sql(e))?;
        if !known {
            self.pending_ids.insert((key.id, r.mod_revision));
            // A source that reads by key (a data file) keeps each key's
            // revisions in one chunk.
            let key_ends = self.window.last().is_some_and(|(_, k)| k.id != key.id);
            if (key_ends && self.window.len() >= CHUNK) || self.window.len() >= 8 * CHUNK {
                self.send_window()?;
            }
            self.window.push((r, key));
        }
        let aged = self.in_batch >= BATCH && self.batch_began.elapsed() >= BATCH_TIME;
        if aged || self.in_batch >= BATCH_MAX {
            self.commit()?;
        }
        Ok(true)
    }
}

/// A test's record of `object` as JSON under `key`, in generation
/// `create_revision`.
#[cfg(test)]
pub(super) fn test_record(
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

/// A test's own run and its writer: every resource, the default field
/// settings, a new hash key; the cluster's row id with it.
#[cfg(test)]
pub(super) fn test_writer(store: &Store) -> (i64, RevisionWriter<'_>) {
    store.load_hash_key(&Default::default()).unwrap();
    let run = store.begin_run("test", "/registry/", "").unwrap();
    let cluster = store.cluster("test").unwrap();
    let fields = store.field_config(None, &[]).unwrap();
    let writer = RevisionWriter::new(
        store,
        cluster,
        run,
        "/registry/",
        fields,
        Default::default(),
        None,
    )
    .unwrap();
    (cluster, writer)
}

#[cfg(test)]
mod tests {
    use super::*;
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
        let (_, mut w) = super::test_writer(store);
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
                store.read_canonical_value(hash).unwrap().unwrap()["status"]["phase"],
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
                store.read_canonical_value(hash).unwrap().unwrap()["status"]["phase"],
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
            let stored = store.read_canonical_value(hash).unwrap().unwrap();
            assert_eq!(stored["status"]["phase"], *phase);
            assert_eq!(stored["spec"]["containers"][0]["env"][29]["name"], "SETTING_29");
        }
    }
}
