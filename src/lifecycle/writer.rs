//! Writes records into the database: each `(key, mod_revision)` once, with
//! what decoding its value tells (encoding, apiVersion, kind, uid, ...), its
//! semantic hash, and each distinct semantic content once (compressed
//! canonical JSON and field hashes), in batched transactions. Values are
//! decoded in chunks on worker threads ([`crate::ingest::pipeline`]) while this
//! thread inserts the chunks before them in order.

use crate::canon::keyed_hash::HashKind;
use crate::canon::path::FieldPath;
use crate::canon::semantic::FieldConfig;
use crate::decode::key::parse_key;
use crate::decrypt::Decryptor;
use crate::ingest::base::{Base, BaseBlob, Bases, Plain};
use crate::ingest::blob::{pack, repack_without, ZSTD};
use crate::ingest::foreign::Kinds;
use crate::ingest::pipeline::{self, Chunk, Pipeline};
use crate::ingest::prepare::{Against, KeyInfo, PlainBlobs, Prepared, Semantic};
use crate::source::filter::ResourceFilter;
use crate::source::{Record, Revision, Sink};
use crate::store::recorder::RunRecorder;
use crate::store::ClusterId;
use crate::store::{field_blob, ContentRow, KeyId, RevisionRow, RevisionRows, RunId, StoreError};
use std::collections::{HashMap, HashSet};
use std::sync::Arc;

/// The hasher of the maps every record looks up (foldhash: SipHash, the
/// standard one, cost the writer's thread 2% of a file run).
type FastHash = hashbrown::DefaultHashBuilder;

/// Records decoded together on the worker threads (a chunk ends at the
/// end of a key's revisions past this).
const CHUNK: usize = 128;
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
    rows: Box<dyn RevisionRows + 's>,
    cluster: ClusterId,
    run: RunId,
    prefix: String,
    filter: ResourceFilter,
    /// Records that are not stored yet, sent to the workers in key order
    /// once they fill a chunk and the next record's key is another.
    window: Vec<(Record, KeyInfo)>,
    /// `(key id, mod_revision)` of records pending or in flight, so a
    /// revision the source sends twice (state and history) is stored once.
    pending_ids: HashSet<(KeyId, Revision), FastHash>,
    pipeline: Pipeline,
    /// Records since the open transaction began; 0 when none is open.
    in_batch: usize,
    /// When it began.
    batch_began: std::time::Instant,
    key_ids: HashMap<Vec<u8>, KeyInfo, FastHash>,
    /// The kinds each resource holds, shared by its keys' infos.
    kinds: Kinds,
    path_ids: HashMap<FieldPath, i64, FastHash>,
    bases: Bases,
    /// Revisions this writer stored that were not stored before.
    pub added: i64,
    /// The id of the key keyed hashes are taken with, recorded with each
    /// revision that holds one.
    hash_key: String,
    decryptor: Option<Arc<Decryptor>>,
}

impl<'s> RevisionWriter<'s> {
    /// A writer of `run`'s records of `cluster` into `store`: the records
    /// under `prefix` that `filter` keeps, decrypted with `decryptor` and
    /// hashed as `fields` says.
    pub fn open(
        store: &'s dyn RunRecorder,
        cluster: ClusterId,
        run: RunId,
        prefix: &str,
        fields: FieldConfig,
        filter: ResourceFilter,
        decryptor: Option<Arc<Decryptor>>,
    ) -> Result<Self, StoreError> {
        let (rows, key) = store.revision_rows()?;
        Ok(RevisionWriter {
            hash_key: key.id(),
            rows,
            cluster,
            run,
            prefix: prefix.to_string(),
            filter,
            window: Vec::new(),
            pending_ids: HashSet::default(),
            pipeline: pipeline::start(&fields, &key.hasher(), decryptor.clone()),
            decryptor,
            in_batch: 0,
            batch_began: std::time::Instant::now(),
            key_ids: HashMap::default(),
            kinds: Kinds::default(),
            path_ids: HashMap::default(),
            bases: Bases::default(),
            added: 0,
        })
    }

    /// A writer of every record under `/registry/`, nothing decrypted: what
    /// a test or a benchmark that writes its own records needs.
    pub fn unfiltered(
        store: &'s dyn RunRecorder,
        cluster: ClusterId,
        run: RunId,
        fields: FieldConfig,
    ) -> Result<Self, StoreError> {
        Self::open(
            store,
            cluster,
            run,
            "/registry/",
            fields,
            ResourceFilter::default(),
            None,
        )
    }

    /// The key's row (inserted if new) and what its name tells.
    fn key_info(&mut self, key: &[u8]) -> Result<KeyInfo, StoreError> {
        if let Some(cached) = self.key_ids.get(key) {
            return Ok(cached.clone());
        }
        let parsed = parse_key(&String::from_utf8_lossy(key), &self.prefix).ok();
        if parsed.as_ref().is_some_and(|p| !self.filter.records(p)) {
            // Nothing of it is stored, so it has no row.
            let info = KeyInfo {
                excluded: true,
                ..KeyInfo::new(
                    KeyId(0),
                    parsed.as_ref(),
                    self.decryptor.as_deref(),
                    &mut self.kinds,
                )
            };
            self.cache_key(key, info.clone());
            return Ok(info);
        }
        let id = self.rows.key_id(self.cluster, key, parsed.as_ref())?;
        let info = KeyInfo::new(id, parsed.as_ref(), self.decryptor.as_deref(), &mut self.kinds);
        self.cache_key(key, info.clone());
        Ok(info)
    }

    /// Keeps the renewTime of a Lease the filter leaves out, decoded here
    /// (nothing else of it is): a value that does not decode marks nothing.
    fn mark_renewal(&mut self, r: &Record, key: &KeyInfo) -> Result<(), StoreError> {
        let opened = crate::ingest::open::open(&key.class, &r.key, &r.value, self.decryptor.as_deref());
        let renewed = match &opened {
            crate::ingest::open::Opened::Decoded { decoded, .. } => {
                crate::canon::facts::renew_time(&decoded.object)
            }
            _ => None,
        };
        if let Some(at) = renewed {
            self.rows.insert_clock_mark(self.cluster, r.mod_revision, &at)?;
        }
        Ok(())
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
        let id = self.rows.path_id(path)?;
        self.path_ids.insert(path.clone(), id);
        Ok(id)
    }

    /// The field blob of `s`: its hashes by path id.
    fn field_blob(&mut self, s: &Semantic) -> Result<Vec<u8>, StoreError> {
        let mut ids = Vec::with_capacity(s.fields.len());
        for (path, h) in &s.fields {
            ids.push((self.path_id(path)?, h));
        }
        Ok(field_blob::encode(ids))
    }

    /// Stores the chunk's contents that are stored in full, together
    /// (a server backend answers them in one round trip, not one each):
    /// per revision, what storing its content in full gave.
    fn store_full_contents(&mut self, chunk: &[Prepared]) -> Result<Vec<Option<StoredFull>>, StoreError> {
        let mut fields = Vec::with_capacity(chunk.len());
        for p in chunk {
            fields.push(match &p.semantic {
                Some(s) if matches!(s.against, Against::Nothing) => {
                    let plain = self.field_blob(s)?;
                    let packed = pack(&plain, &[]);
                    Some((plain, packed))
                }
                _ => None,
            });
        }
        let rows: Vec<ContentRow> = chunk
            .iter()
            .zip(&fields)
            .filter_map(|(p, f)| {
                let (s, (_, packed)) = (p.semantic.as_ref()?, f.as_ref()?);
                Some(ContentRow {
                    hash: &s.hash,
                    keyed: s.keyed,
                    codec: ZSTD,
                    base: None,
                    canonical: s.canonical.as_deref(),
                    redacted: s.redacted.as_deref(),
                    fields: packed,
                    managed: s.managed.as_deref(),
                })
            })
            .collect();
        let mut ids = self.rows.insert_contents(&rows)?.into_iter();
        Ok(fields
            .into_iter()
            .map(|f| {
                f.map(|(fields, _)| StoredFull {
                    fields: Arc::new(fields),
                    id: ids.next().expect("one answer per content"),
                })
            })
            .collect())
    }

    /// Stores the semantic content once: compressed against the key's base
    /// when the record had one, or against the revision before it in its
    /// chunk (`chunk`, which storing a content in full sets), else in full
    /// (`full`, stored with its chunk's others), becoming the key's base.
    fn store_semantic(
        &mut self,
        key_id: KeyId,
        s: Semantic,
        chunk: &mut Option<ChunkBase>,
        full: Option<StoredFull>,
    ) -> Result<(), StoreError> {
        if let Some(full) = full {
            if let Some(plain) = s.plain {
                *chunk = Some(ChunkBase {
                    key_id,
                    stored: full.id.map(|id| {
                        self.bases.insert(
                            key_id,
                            Base {
                                id,
                                canonical: BaseBlob::plain(plain.canonical.clone()),
                                fields: BaseBlob::plain(full.fields.clone()),
                                managed: BaseBlob::plain(plain.managed.clone()),
                            },
                        );
                        (id, full.fields)
                    }),
                    plain,
                });
            }
            return Ok(());
        }
        let fields = self.field_blob(&s)?;
        let (mut canonical, mut managed) = (s.canonical, s.managed);
        let (base_id, fields_dict): (Option<i64>, &[u8]) = match (&s.against, &*chunk) {
            (Against::Stored(b), _) => (Some(b.id), b.fields.bytes()),
            (Against::Chunk, Some(c)) if c.key_id == key_id => match &c.stored {
                Some((id, fields)) => (Some(*id), fields),
                // Its dictionary's content was stored before, not as this
                // key's base: store this one in full instead.
                None => {
                    let repack =
                        |b: Option<Vec<u8>>, dict: &[u8]| b.map(|b| repack_without(&b, dict)).transpose();
                    let io = |source| StoreError::Io {
                        path: self.rows.location().to_path_buf(),
                        source,
                    };
                    canonical = repack(canonical, &c.plain.canonical).map_err(io)?;
                    managed = repack(managed, &c.plain.managed).map_err(io)?;
                    (None, &[])
                }
            },
            (Against::Nothing, _) | (Against::Chunk, _) => {
                return Err(StoreError::WorkerPanicked {
                    path: self.rows.location().to_path_buf(),
                    message: "a revision was compressed against one its chunk does not hold".into(),
                })
            }
        };
        let packed_fields = pack(&fields, fields_dict);
        self.rows.insert_content(&ContentRow {
            hash: &s.hash,
            keyed: s.keyed,
            codec: ZSTD,
            base: base_id,
            canonical: canonical.as_deref(),
            redacted: s.redacted.as_deref(),
            fields: &packed_fields,
            managed: managed.as_deref(),
        })?;
        Ok(())
    }

    /// Inserts one prepared revision.
    fn store_revision(
        &mut self,
        mut p: Prepared,
        chunk: &mut Option<ChunkBase>,
        full: Option<StoredFull>,
    ) -> Result<(), StoreError> {
        let semantic_hash = p.semantic.as_ref().map(|s| s.hash.clone());
        let keyed = p.semantic.as_ref().is_some_and(|s| s.keyed)
            || p.value_hash
                .as_ref()
                .is_some_and(|h| h.1 == HashKind::HmacSha256.as_str());
        if let Some(s) = p.semantic.take() {
            self.store_semantic(p.key.id, s, chunk, full)?;
        }
        let r = &p.record;
        // A tombstone read from a file carries only its key: it ends the
        // generation of the key's previous revision.
        let create_revision = if r.deleted && r.create_revision == Revision(0) {
            self.rows
                .generation_before(p.key.id, r.mod_revision)?
                .unwrap_or_default()
        } else {
            r.create_revision
        };
        self.rows.insert_revision(&RevisionRow {
            key_id: p.key.id,
            cluster: self.cluster,
            record: r,
            create_revision,
            value_size: p.value_size as i64,
            value_hash: p.value_hash.as_ref().map(|(h, kind)| (h.as_slice(), *kind)),
            described: &p.described,
            facts: &p.facts,
            duplicates: p.duplicates.as_deref(),
            run: self.run,
            semantic_hash: semantic_hash.as_deref(),
            hash_key: keyed.then_some(self.hash_key.as_str()),
        })?;
        if let Some(at) = &p.facts.renew_time {
            self.rows.insert_clock_mark(self.cluster, r.mod_revision, at)?;
        }
        self.added += 1;
        Ok(())
    }

    /// Inserts one chunk the workers prepared, inside a transaction.
    fn store_chunk(&mut self, done: Result<Vec<Prepared>, String>) -> Result<(), StoreError> {
        let chunk = done.map_err(|message| StoreError::WorkerPanicked {
            path: self.rows.location().to_path_buf(),
            message,
        })?;
        self.begin_if_needed()?;
        self.in_batch = self.in_batch.max(1);
        let full = self.store_full_contents(&chunk)?;
        let mut base = None;
        for (prepared, full) in chunk.into_iter().zip(full) {
            self.pending_ids
                .remove(&(prepared.key.id, prepared.record.mod_revision));
            self.store_revision(prepared, &mut base, full)?;
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
        // Records stored before (by an earlier run, or read twice) are
        // dropped: one question for the window.
        let revisions: Vec<(KeyId, Revision)> = window.iter().map(|(r, k)| (k.id, r.mod_revision)).collect();
        let mut stored = self.rows.stored_revisions(&revisions)?.into_iter();
        let pending_ids = &mut self.pending_ids;
        window.retain(|(r, k)| {
            let stored = stored.next().unwrap_or(false);
            if stored {
                pending_ids.remove(&(k.id, r.mod_revision));
            }
            !stored
        });
        window.sort_by_key(|(r, k)| (k.id, r.mod_revision));
        let mut fetched = self.fetch_bases(&window)?;
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
                (false, _) => {
                    let rows = &mut self.rows;
                    self.bases.find(key.id, |id| match fetched.remove(&id) {
                        Some(base) => Ok::<_, StoreError>(base),
                        None => Ok(rows.latest_bases(&[id])?.pop().flatten()),
                    })?
                }
            };
            chunk.push((record, key, base));
        }
        if !chunk.is_empty() {
            self.send_chunk(chunk)?;
        }
        Ok(())
    }

    /// The stored bases of the window's keys that are not cached, read
    /// together (a server backend answers in one round trip, not one a key).
    fn fetch_bases(
        &mut self,
        window: &[(Record, KeyInfo)],
    ) -> Result<HashMap<KeyId, Option<Base>>, StoreError> {
        let mut keys: Vec<KeyId> = window
            .iter()
            .filter(|(r, k)| !r.deleted && !self.bases.holds(k.id))
            .map(|(_, k)| k.id)
            .collect();
        keys.dedup();
        let bases = self.rows.latest_bases(&keys)?;
        Ok(keys.into_iter().zip(bases).collect())
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
            self.rows.begin()?;
            self.batch_began = std::time::Instant::now();
        }
        Ok(())
    }

    /// Commits what is written so far (records still decoding go into the
    /// next transaction).
    fn commit(&mut self) -> Result<(), StoreError> {
        if self.in_batch > 0 {
            self.rows.commit()?;
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
            self.rows.rollback();
            self.in_batch = 0;
        }
    }
}

/// A content stored in full ahead of its chunk's other rows.
struct StoredFull {
    /// Its plain field blob.
    fields: Plain,
    /// Its new row, `None` when its hash was stored before.
    id: Option<i64>,
}

/// The revision a chunk stored in full last, which the revisions after it
/// of the same key in the chunk are compressed against.
struct ChunkBase {
    key_id: KeyId,
    /// Its row and plain field blob, when this writer inserted it.
    stored: Option<(i64, Plain)>,
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
            // A Lease left out still tells the time.
            if key.lease && !r.deleted {
                self.mark_renewal(&r, &key)?;
            }
            return Ok(true);
        }
        // Whether it is stored already is asked when the window is sent.
        if self.pending_ids.insert((key.id, r.mod_revision)) {
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
