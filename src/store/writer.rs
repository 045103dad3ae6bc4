//! Writes records into the database: each `(key, mod_revision)` once, with
//! what decoding its value tells (encoding, apiVersion, kind, uid, ...), in
//! batched transactions.

use super::keyed_hash::ValueHasher;
use super::{RunId, Store, StoreError};
use crate::canon::sensitive::is_sensitive_resource;
use crate::decode::key::{parse_key, SpecialKey};
use crate::decode::{decode_value, Outcome};
use crate::source::{Record, Sink};
use rusqlite::{params, OptionalExtension};
use std::collections::HashMap;

/// Revisions written per transaction.
const BATCH: usize = 2000;
/// Key ids cached before the cache is dropped (bounds memory).
const KEY_CACHE: usize = 200_000;

/// A [`Sink`] that stores records for one run of one cluster.
pub struct RevisionWriter<'s> {
    store: &'s Store,
    cluster: i64,
    run: RunId,
    prefix: String,
    in_batch: usize,
    key_ids: HashMap<Vec<u8>, i64>,
    hasher: ValueHasher,
    /// Revisions this writer stored that were not stored before.
    pub added: i64,
}

/// The columns decoding a value fills.
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
                api_version: Some(d.api_version),
                kind: Some(d.kind),
                namespace: text("namespace"),
                name: text("name"),
                uid: text("uid"),
                generation: meta.and_then(|m| m.get("generation")).and_then(|v| v.as_i64()),
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

impl<'s> RevisionWriter<'s> {
    pub fn new(store: &'s Store, cluster: i64, run: RunId, prefix: &str) -> Result<Self, StoreError> {
        Ok(RevisionWriter {
            store,
            cluster,
            run,
            prefix: prefix.to_string(),
            in_batch: 0,
            key_ids: HashMap::new(),
            hasher: store.value_hasher()?,
            added: 0,
        })
    }

    fn sql(&self, e: rusqlite::Error) -> StoreError {
        self.store.err(e)
    }

    /// The key's row id, whether it is a special key, and whether its values
    /// are sensitive.
    fn key_id(&mut self, key: &[u8]) -> Result<(i64, Option<SpecialKey>, bool), StoreError> {
        let text = String::from_utf8_lossy(key);
        let parsed = parse_key(&text, &self.prefix).ok();
        let special = parsed.as_ref().and_then(|p| p.special);
        let sensitive = parsed
            .as_ref()
            .is_some_and(|p| is_sensitive_resource(&p.group, &p.resource));
        if let Some(&id) = self.key_ids.get(key) {
            return Ok((id, special, sensitive));
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
        if self.key_ids.len() >= KEY_CACHE {
            self.key_ids.clear();
        }
        self.key_ids.insert(key.to_vec(), id);
        Ok((id, special, sensitive))
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
        let conn = &self.store.conn;
        let known = conn
            .prepare_cached("SELECT 1 FROM revisions WHERE key_id = ?1 AND mod_revision = ?2")
            .and_then(|mut s| s.exists(params![key_id, r.mod_revision]))
            .map_err(|e| self.sql(e))?;
        if !known {
            let d = if r.deleted {
                Decoded::default()
            } else {
                describe(&r.value, special)
            };
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
                 value_hash, encoding, encryption, api_version, kind, namespace, name, uid, generation, decode_error, run_id) \
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19)",
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
