//! The writer's chunks of records prepared on the ingest stage's workers
//! (decode, hash, compress) while the writer's thread inserts earlier
//! chunks, so decoding runs on every core and overlaps reading the source
//! and writing the database.

use super::base::Base;
use super::prepare::{prepare, Dict, KeyId, KeyInfo, PlainBlobs, Prepared};
use super::workers::Workers;
use crate::canon::keyed_hash::ValueHasher;
use crate::canon::semantic::FieldConfig;
use crate::decrypt::Decryptor;
use crate::source::Record;
use std::sync::Arc;

/// Records, what their keys' names tell, and the keys' bases.
pub(crate) type Chunk = Vec<(Record, KeyInfo, Option<Arc<Base>>)>;

/// The workers preparing the writer's chunks.
pub(crate) type Pipeline = Workers<Chunk, Vec<Prepared>>;

/// Prepares a chunk in order. A chunk holds each key's revisions together
/// (see the writer's window): a revision without a stored base is
/// compressed against the key's revision before it in the chunk that is
/// stored in full.
fn prepare_chunk(
    chunk: Chunk,
    config: &FieldConfig,
    hasher: &ValueHasher,
    decryptor: Option<&Decryptor>,
) -> Vec<Prepared> {
    let mut full: Option<(KeyId, Arc<PlainBlobs>)> = None;
    let mut out = Vec::with_capacity(chunk.len());
    for (record, key, base) in chunk {
        let dict = match (base, &full) {
            (Some(base), _) => Dict::Stored(base),
            (None, Some((id, plain))) if *id == key.id => Dict::Chunk(plain.clone()),
            (None, _) => Dict::None,
        };
        let id = key.id;
        let prepared = prepare(record, key, dict, config, hasher, decryptor);
        if let Some(plain) = prepared.semantic.as_ref().and_then(|s| s.plain.clone()) {
            full = Some((id, plain));
        }
        out.push(prepared);
    }
    out
}

/// Starts the workers.
pub(crate) fn start(
    config: &FieldConfig,
    hasher: &ValueHasher,
    decryptor: Option<Arc<Decryptor>>,
) -> Pipeline {
    let (config, hasher) = (config.clone(), hasher.clone());
    Workers::new(move |chunk| prepare_chunk(chunk, &config, &hasher, decryptor.as_deref()))
}
