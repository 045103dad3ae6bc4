//! Writes records into the database: each `(key, mod_revision)` once, with
//! what decoding its value tells (encoding, apiVersion, kind, uid, ...), its
//! semantic hash, and each distinct semantic content once (compressed
//! canonical JSON and field hashes), in batched transactions. Values are
//! decoded in chunks on worker threads ([`super::pipeline`]) while this
//! thread inserts the chunks before them in order.

use super::blob::{unpack, Packer, ZSTD};
use super::pipeline::Pipeline;
use super::prepare::{KeyInfo, Prepared, Semantic};
use super::{RunId, Store, StoreError};
use crate::canon::semantic::Sensitivity;
use crate::decode::key::parse_key;
use crate::source::filter::ResourceFilter;
use crate::source::{Record, Sink};
use rusqlite::{params, OptionalExtension};
use std::collections::{HashMap, HashSet};

/// Records decoded together on the worker threads.
const CHUNK: usize = 256;
/// Revisions written per transaction.
const BATCH: usize = 2000;
/// Key ids cached before the cache is dropped (bounds memory).
const KEY_CACHE: usize = 200_000;
/// Bytes of base content kept in memory before the bases are dropped.
const BASE_BYTES: usize = 32 << 20;

/// How field hashes are taken; fixed per database.
#[derive(Clone, Debug)]
pub struct FieldConfig {
    pub depth: usize,
    pub sensitivity: Sensitivity,
}

/// A key's full (not delta) semantic value this writer stored: later values
/// of the key are compressed against its blobs.
#[derive(Default)]
struct Base {
    id: i64,
    canonical: Vec<u8>,
    fields: Vec<u8>,
    managed: Vec<u8>,
}

/// A [`Sink`] that stores records for one run of one cluster.
pub struct RevisionWriter<'s> {
    store: &'s Store,
    cluster: i64,
    run: RunId,
    prefix: String,
    filter: ResourceFilter,
    /// Records that are not stored yet, waiting for the next chunk.
    pending: Vec<(Record, KeyInfo)>,
    /// `(key id, mod_revision)` of records pending or in flight, so a
    /// revision the source sends twice (state and history) is stored once.
    pending_ids: HashSet<(i64, i64)>,
    pipeline: Pipeline,
    /// Records since the open transaction began; 0 when none is open.
    in_batch: usize,
    key_ids: HashMap<Vec<u8>, KeyInfo>,
    path_ids: HashMap<String, i64>,
    packer: Packer,
    bases: HashMap<i64, Base>,
    base_bytes: usize,
    /// Revisions this writer stored that were not stored before.
    pub added: i64,
}

/// Appends `n` as a LEB128 varint.
fn put_varint(out: &mut Vec<u8>, mut n: u64) {
    loop {
        let byte = (n & 0x7f) as u8;
        n >>= 7;
        if n == 0 {
            out.push(byte);
            return;
        }
        out.push(byte | 0x80);
    }
}

impl<'s> RevisionWriter<'s> {
    pub fn new(
        store: &'s Store,
        cluster: i64,
        run: RunId,
        prefix: &str,
        fields: FieldConfig,
        filter: ResourceFilter,
    ) -> Result<Self, StoreError> {
        let hasher = store.value_hasher()?;
        Ok(RevisionWriter {
            store,
            cluster,
            run,
            prefix: prefix.to_string(),
            filter,
            pending: Vec::new(),
            pending_ids: HashSet::new(),
            pipeline: Pipeline::new(&fields, &hasher),
            in_batch: 0,
            key_ids: HashMap::new(),
            path_ids: HashMap::new(),
            packer: Packer::new(),
            bases: HashMap::new(),
            base_bytes: 0,
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
                ..KeyInfo::new(0, parsed.as_ref())
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
        let info = KeyInfo::new(id, parsed.as_ref());
        self.cache_key(key, info);
        Ok(info)
    }

    fn cache_key(&mut self, key: &[u8], info: KeyInfo) {
        if self.key_ids.len() >= KEY_CACHE {
            self.key_ids.clear();
        }
        self.key_ids.insert(key.to_vec(), info);
    }

    fn path_id(&mut self, path: &str) -> Result<i64, StoreError> {
        if let Some(&id) = self.path_ids.get(path) {
            return Ok(id);
        }
        let conn = &self.store.conn;
        conn.prepare_cached("INSERT OR IGNORE INTO field_paths (path) VALUES (?1)")
            .and_then(|mut s| s.execute([path]))
            .map_err(|e| self.sql(e))?;
        let id = conn
            .prepare_cached("SELECT id FROM field_paths WHERE path = ?1")
            .and_then(|mut s| s.query_row([path], |r| r.get(0)))
            .map_err(|e| self.sql(e))?;
        self.path_ids.insert(path.to_string(), id);
        Ok(id)
    }

    /// Puts the key's base in the cache when it is not there: the base of
    /// the key's latest stored content (from an earlier run, or evicted).
    fn load_base(&mut self, key_id: i64) -> Result<(), StoreError> {
        if self.bases.contains_key(&key_id) {
            return Ok(());
        }
        let row = self
            .store
            .conn
            .prepare_cached(
                "SELECT b.id, b.canonical, b.fields, b.managed FROM revisions r \
                 JOIN semantic_values s ON s.hash = r.semantic_sha256 \
                 JOIN semantic_values b ON b.id = coalesce(s.base, s.id) \
                 WHERE r.key_id = ?1 AND b.codec = 'zstd' ORDER BY r.mod_revision DESC LIMIT 1",
            )
            .and_then(|mut st| {
                st.query_row([key_id], |r| {
                    let blob = |i| -> rusqlite::Result<Vec<u8>> {
                        let packed: Option<Vec<u8>> = r.get(i)?;
                        Ok(packed
                            .and_then(|p| unpack(ZSTD, &p, None).ok())
                            .unwrap_or_default())
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
            .map_err(|e| self.sql(e))?;
        if let Some(base) = row {
            self.cache_base(key_id, base);
        }
        Ok(())
    }

    fn cache_base(&mut self, key_id: i64, base: Base) {
        self.base_bytes += base.canonical.len() + base.fields.len() + base.managed.len();
        if self.base_bytes > BASE_BYTES {
            self.bases.clear();
            self.base_bytes = 0;
        }
        self.bases.insert(key_id, base);
    }

    /// Stores the semantic content once, compressed against the key's base
    /// when this writer has one; the first content stored becomes the base.
    fn store_semantic(&mut self, key_id: i64, s: &Semantic) -> Result<(), StoreError> {
        let known = self
            .store
            .conn
            .prepare_cached("SELECT 1 FROM semantic_values WHERE hash = ?1")
            .and_then(|mut st| st.exists([&s.hash]))
            .map_err(|e| self.sql(e))?;
        if known {
            return Ok(());
        }
        let mut fields = Vec::new();
        for (path, h) in &s.fields {
            put_varint(&mut fields, self.path_id(path)? as u64);
            fields.extend_from_slice(h);
        }
        self.load_base(key_id)?;
        let base = self.bases.get(&key_id);
        let empty = Base::default();
        let dict = base.unwrap_or(&empty);
        let canonical = (!s.keyed).then(|| self.packer.pack(&s.canonical, &dict.canonical));
        let packed_fields = self.packer.pack(&fields, &dict.fields);
        let managed = s.managed.as_ref().map(|m| self.packer.pack(m, &dict.managed));
        let base_id = base.map(|b| b.id);
        self.store
            .conn
            .prepare_cached(
                "INSERT INTO semantic_values (hash, keyed, codec, base, canonical, fields, managed) \
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
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
        if base_id.is_none() {
            let base = Base {
                id: self.store.conn.last_insert_rowid(),
                canonical: if s.keyed { Vec::new() } else { s.canonical.clone() },
                fields,
                managed: s.managed.clone().unwrap_or_default(),
            };
            self.cache_base(key_id, base);
        }
        Ok(())
    }

    /// Inserts one prepared revision.
    fn store_revision(&mut self, p: Prepared) -> Result<(), StoreError> {
        if let Some(s) = &p.semantic {
            self.store_semantic(p.key.id, s)?;
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
             deletion_timestamp, phase, node, desired, managers, duplicates, observed_generation) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, ?20, \
             ?21, ?22, ?23, ?24, ?25, ?26, ?27, ?28, ?29, ?30, ?31, ?32, ?33)",
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
                p.semantic.as_ref().map(|s| &s.hash),
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
            ])
        })
        .map_err(|e| self.sql(e))?;
        self.added += 1;
        Ok(())
    }

    /// Inserts one chunk the workers prepared, inside a transaction.
    fn store_chunk(&mut self, done: Result<Vec<Prepared>, String>) -> Result<(), StoreError> {
        let chunk = done.map_err(|message| StoreError::Conflict {
            path: self.store.path.clone(),
            message: format!("not written: decoding failed: {message}"),
        })?;
        self.begin_if_needed()?;
        self.in_batch = self.in_batch.max(1);
        for prepared in chunk {
            self.pending_ids
                .remove(&(prepared.key.id, prepared.record.mod_revision));
            self.store_revision(prepared)?;
        }
        Ok(())
    }

    /// Sends the pending records to the workers and inserts the chunks that
    /// are ready, waiting while too many are in flight (bounding memory).
    fn send_pending(&mut self) -> Result<(), StoreError> {
        self.pipeline.send(std::mem::take(&mut self.pending));
        while let Some(done) = self.pipeline.next(false) {
            self.store_chunk(done)?;
        }
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
        if !self.pending.is_empty() {
            self.pipeline.send(std::mem::take(&mut self.pending));
        }
        while let Some(done) = self.pipeline.next(true) {
            self.store_chunk(done)?;
        }
        self.commit()
    }

    /// Drops the pending records and the open batch (the run stops; nothing
    /// half-written remains).
    pub fn abort(&mut self) {
        self.pending.clear();
        self.pipeline.discard();
        self.pending_ids.clear();
        if self.in_batch > 0 {
            let _ = self.store.conn.execute_batch("ROLLBACK");
            self.in_batch = 0;
        }
    }
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

    fn record(&mut self, r: Record) -> Result<(), StoreError> {
        self.begin_if_needed()?;
        self.in_batch += 1;
        let key = self.key_info(&r.key)?;
        if key.excluded {
            return Ok(());
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
            self.pending.push((r, key));
            if self.pending.len() >= CHUNK {
                self.send_pending()?;
            }
        }
        if self.in_batch >= BATCH {
            self.commit()?;
        }
        Ok(())
    }
}
