//! Writes records into the database: each `(key, mod_revision)` once, with
//! what decoding its value tells (encoding, apiVersion, kind, uid, ...), its
//! semantic hash, and each distinct semantic content once (compressed
//! canonical JSON and field hashes), in batched transactions.

use super::{RunId, Store, StoreError};
use crate::canon::duplicates::duplicate_entries;
use crate::canon::facts::object_facts;
use crate::canon::keyed_hash::ValueHasher;
use crate::canon::semantic::{field_hashes, semantic_form, Sensitivity};
use crate::canon::sensitive::{is_secret, is_sensitive_resource};
use crate::decode::key::{parse_key, SpecialKey};
use crate::decode::{decode_value, Outcome};
use crate::source::{Record, Sink};
use rusqlite::{params, OptionalExtension};
use serde_json::Value;
use std::collections::HashMap;

/// Revisions written per transaction.
const BATCH: usize = 2000;
/// Key ids cached before the cache is dropped (bounds memory).
const KEY_CACHE: usize = 200_000;

/// How field hashes are taken; fixed per database.
#[derive(Clone, Debug)]
pub struct FieldConfig {
    pub depth: usize,
    pub sensitivity: Sensitivity,
}

/// A [`Sink`] that stores records for one run of one cluster.
pub struct RevisionWriter<'s> {
    store: &'s Store,
    cluster: i64,
    run: RunId,
    prefix: String,
    in_batch: usize,
    /// Key → (row id, special key, sensitive values), so a key is parsed once.
    key_ids: HashMap<Vec<u8>, (i64, Option<SpecialKey>, bool)>,
    path_ids: HashMap<String, i64>,
    hasher: ValueHasher,
    fields: FieldConfig,
    /// Revisions this writer stored that were not stored before.
    pub added: i64,
}

/// The columns decoding a value fills, and the object itself.
#[derive(Default)]
struct Decoded {
    encoding: Option<String>,
    encryption: Option<String>,
    api_version: Option<String>,
    kind: Option<String>,
    namespace: Option<String>,
    name: Option<String>,
    uid: Option<String>,
    generation: Option<i64>,
    error: Option<String>,
    object: Option<Value>,
}

fn describe(value: &[u8], special: Option<SpecialKey>) -> Decoded {
    if special == Some(SpecialKey::CompactRevision) {
        return Decoded {
            encoding: Some("text".into()),
            ..Decoded::default()
        };
    }
    match decode_value(value) {
        Ok(Outcome::Decoded(d)) => {
            let meta = d.object.get("metadata");
            let text = |k: &str| {
                meta.and_then(|m| m.get(k))
                    .and_then(|v| v.as_str())
                    .filter(|v| !v.is_empty())
                    .map(str::to_string)
            };
            Decoded {
                encoding: Some(d.encoding.as_str().into()),
                namespace: text("namespace"),
                name: text("name"),
                uid: text("uid"),
                generation: meta.and_then(|m| m.get("generation")).and_then(|v| v.as_i64()),
                api_version: Some(d.api_version),
                kind: Some(d.kind),
                object: Some(d.object),
                ..Decoded::default()
            }
        }
        Ok(Outcome::Encrypted(e)) => Decoded {
            encoding: Some("encrypted".into()),
            encryption: Some(format!("{}:{}:{}", e.provider, e.version, e.key_name)),
            ..Decoded::default()
        },
        Err(e) => Decoded {
            encoding: e.encoding.map(|enc| enc.as_str().to_string()),
            error: Some(match e.offset {
                Some(o) if !e.reason.contains("byte offset") => format!("{} (byte offset {o})", e.reason),
                _ => e.reason,
            }),
            ..Decoded::default()
        },
    }
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
    ) -> Result<Self, StoreError> {
        Ok(RevisionWriter {
            store,
            cluster,
            run,
            prefix: prefix.to_string(),
            in_batch: 0,
            key_ids: HashMap::new(),
            path_ids: HashMap::new(),
            hasher: store.value_hasher()?,
            fields,
            added: 0,
        })
    }

    fn sql(&self, e: rusqlite::Error) -> StoreError {
        self.store.err(e)
    }

    /// The key's row id, whether it is a special key, and whether its values
    /// are sensitive.
    fn key_id(&mut self, key: &[u8]) -> Result<(i64, Option<SpecialKey>, bool), StoreError> {
        if let Some(&cached) = self.key_ids.get(key) {
            return Ok(cached);
        }
        let text = String::from_utf8_lossy(key);
        let parsed = parse_key(&text, &self.prefix).ok();
        let special = parsed.as_ref().and_then(|p| p.special);
        let sensitive = parsed
            .as_ref()
            .is_some_and(|p| is_sensitive_resource(&p.group, &p.resource));
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
        if self.key_ids.len() >= KEY_CACHE {
            self.key_ids.clear();
        }
        self.key_ids.insert(key.to_vec(), (id, special, sensitive));
        Ok((id, special, sensitive))
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

    /// Stores the object's semantic content once and returns its hash.
    fn semantic(&mut self, object: &Value, sensitive_resource: bool) -> Result<Vec<u8>, StoreError> {
        let form = semantic_form(object);
        let secret = sensitive_resource || is_secret(object);
        let keyed = self.fields.sensitivity.covers_any(secret, &form);
        let canonical = serde_json::to_vec(&form).expect("JSON values serialize");
        let hash = self.hasher.hash(&canonical, keyed).0;
        let known = self
            .store
            .conn
            .prepare_cached("SELECT 1 FROM semantic_values WHERE hash = ?1")
            .and_then(|mut s| s.exists([&hash]))
            .map_err(|e| self.sql(e))?;
        if known {
            return Ok(hash);
        }
        let mut fields = Vec::new();
        for (path, h) in field_hashes(
            &form,
            self.fields.depth,
            secret,
            &self.fields.sensitivity,
            &self.hasher,
        ) {
            put_varint(&mut fields, self.path_id(&path)? as u64);
            fields.extend_from_slice(&h);
        }
        let stored = (!keyed).then(|| super::compress(&canonical));
        let managed = object
            .pointer("/metadata/managedFields")
            .map(|m| super::compress(&serde_json::to_vec(m).expect("JSON values serialize")));
        self.store
            .conn
            .prepare_cached("INSERT INTO semantic_values (hash, keyed, canonical, fields, managed) VALUES (?1, ?2, ?3, ?4, ?5)")
            .and_then(|mut s| s.execute(params![hash, keyed, stored, fields, managed]))
            .map_err(|e| self.sql(e))?;
        Ok(hash)
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

    /// Commits the open batch.
    pub fn flush(&mut self) -> Result<(), StoreError> {
        if self.in_batch > 0 {
            self.store.conn.execute_batch("COMMIT").map_err(|e| self.sql(e))?;
            self.in_batch = 0;
        }
        Ok(())
    }

    /// Drops the open batch (the run stops; nothing half-written remains).
    pub fn abort(&mut self) {
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
        let (key_id, special, sensitive) = self.key_id(&r.key)?;
        let known = self
            .store
            .conn
            .prepare_cached("SELECT 1 FROM revisions WHERE key_id = ?1 AND mod_revision = ?2")
            .and_then(|mut s| s.exists(params![key_id, r.mod_revision]))
            .map_err(|e| self.sql(e))?;
        if !known {
            let d = if r.deleted {
                Decoded::default()
            } else {
                describe(&r.value, special)
            };
            let semantic = match &d.object {
                Some(object) => Some(self.semantic(object, sensitive)?),
                None => None,
            };
            let f = d.object.as_ref().map(object_facts).unwrap_or_default();
            let duplicates = d
                .object
                .as_ref()
                .map(duplicate_entries)
                .filter(|d| !d.is_empty())
                .map(|d| serde_json::to_string(&d).expect("JSON"));
            let conn = &self.store.conn;
            // A tombstone read from a file carries only its key: it ends the
            // generation of the key's previous revision.
            let create_revision = if r.deleted && r.create_revision == 0 {
                conn.prepare_cached(
                    "SELECT create_revision FROM revisions WHERE key_id = ?1 AND mod_revision < ?2 \
                     ORDER BY mod_revision DESC LIMIT 1",
                )
                .and_then(|mut s| {
                    s.query_row(params![key_id, r.mod_revision], |row| row.get(0))
                        .optional()
                })
                .map_err(|e| self.sql(e))?
                .unwrap_or(0)
            } else {
                r.create_revision
            };
            let (hash, hash_kind) = match r.deleted {
                true => (None, None),
                false => {
                    let (h, kind) = self.hasher.hash(&r.value, sensitive);
                    (Some(h), Some(kind.as_str()))
                }
            };
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
                    key_id,
                    r.mod_revision,
                    create_revision,
                    r.version,
                    r.lease,
                    r.deleted,
                    r.value.len() as i64,
                    hash,
                    hash_kind,
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
                    semantic,
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
                    duplicates,
                    f.observed_generation,
                ])
            })
            .map_err(|e| self.sql(e))?;
            self.added += 1;
        }
        if self.in_batch >= BATCH {
            self.flush()?;
        }
        Ok(())
    }
}
