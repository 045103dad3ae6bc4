//! Stored canonical values read back for detectors and diffs: each once,
//! and the first read that fails kept, so the caller fails instead of
//! showing a damaged value as missing.

use super::reader::{ContentReads, HistoryReads};
use super::sql::{Cursor, Sql};
use super::tables::Cell;
use crate::canon::path::FieldPath;
use crate::source::Revision;
use crate::store::ClusterId;
use crate::store::{AnalysisReads, StoreError};
use serde_json::Value;
use std::collections::HashMap;

/// Values a reader keeps before it starts its cache over.
const CACHED: usize = 256;

/// What a value looks up to.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Looked<'v> {
    /// The value at the path (`Null` when the object lacks it).
    Found(&'v Value),
    /// The stored content holds sensitive values and is never stored.
    Redacted,
    /// Nothing to show: no content, or the read failed (see
    /// [`ValueReader::finish`]).
    Absent,
}

/// Reads canonical values by semantic hash, caching each.
pub struct ValueReader<'s> {
    store: &'s dyn AnalysisReads,
    cache: HashMap<Vec<u8>, Option<Value>>,
    failure: Option<StoreError>,
}

impl<'s> ValueReader<'s> {
    pub fn new(store: &'s dyn AnalysisReads) -> ValueReader<'s> {
        ValueReader {
            store,
            cache: HashMap::new(),
            failure: None,
        }
    }

    /// The field at `path` of the content stored under `hash`.
    pub fn at(&mut self, hash: Option<&[u8]>, path: &FieldPath) -> Looked<'_> {
        match self.content(hash) {
            Looked::Found(v) => Looked::Found(path.get(v).unwrap_or(&Value::Null)),
            other => other,
        }
    }

    /// The whole content stored under `hash`.
    pub fn content(&mut self, hash: Option<&[u8]>) -> Looked<'_> {
        let Some(hash) = hash else {
            return Looked::Absent;
        };
        if !self.cache.contains_key(hash) {
            // One key's or one diff's values at a time: the cache starts
            // over rather than grow with the whole history.
            if self.cache.len() >= CACHED {
                self.cache.clear();
            }
            match self.store.canonical_value(hash) {
                Ok(value) => {
                    self.cache.insert(hash.to_vec(), value);
                }
                Err(e) => {
                    self.failure.get_or_insert(e);
                    return Looked::Absent;
                }
            }
        }
        match &self.cache[hash] {
            None => Looked::Redacted,
            Some(v) => Looked::Found(v),
        }
    }

    /// The first failed read, if any.
    pub fn finish(self) -> Result<(), StoreError> {
        self.failure.map_or(Ok(()), Err)
    }
}

/// One key's revisions, oldest first: mod_revision and content.
pub type Contents = Vec<(Revision, Option<Value>)>;

impl<T: Sql + HistoryReads + ?Sized> ContentReads for T {
    fn contents_of(
        &self,
        cluster: ClusterId,
        group: &str,
        resource: &str,
    ) -> Result<Vec<Contents>, StoreError> {
        let mut out: Vec<Contents> = Vec::new();
        let mut last_key = None;
        self.each(
            "revisions",
            "SELECT r.key_id, r.mod_revision, r.semantic_sha256 FROM revisions r JOIN keys k ON k.id = r.key_id \
             WHERE k.cluster_id = $1 AND k.api_group = $2 AND k.resource = $3 ORDER BY r.key_id, r.mod_revision",
            &[
                Cell::from(cluster),
                Cell::Text(group.to_string()),
                Cell::Text(resource.to_string()),
            ],
            &mut |row| {
                let mut c = Cursor::new(self, "revisions", row);
                let (key, revision) = (c.int("key_id")?, c.revision("mod_revision")?);
                let content = match c.opt_bytes("semantic_sha256")? {
                    Some(h) => self.canonical_value(&h)?,
                    None => None,
                };
                if last_key != Some(key) {
                    out.push(Vec::new());
                    last_key = Some(key);
                }
                out.last_mut().expect("pushed").push((revision, content));
                Ok(())
            },
        )?;
        Ok(out)
    }
}
