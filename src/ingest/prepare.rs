//! The CPU-heavy half of storing a revision, which needs no database: the
//! record through the ingest stage, then its blobs compressed against the
//! key's base. Runs on the [`super::pipeline`] workers; the database half
//! stays on the writer's thread.

use super::base::{Base, Plain};
use super::blob::pack;
use super::foreign::{KeyIdentity, Kinds};
use super::open::KeyClass;
use super::revision::{ingest, Content, Described};
use crate::canon::facts::ObjectFacts;
use crate::canon::keyed_hash::ValueHasher;
use crate::canon::semantic::{FieldConfig, FieldHash};
use crate::decode::key::ParsedKey;
use crate::decrypt::Decryptor;
use crate::source::Record;
use std::sync::Arc;

/// A key's row id in one database, as the store gave it: what the writer,
/// a key's base and a revision row name the key by.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct KeyId(pub i64);

/// What the writer knows about a key before any of its values is decoded.
#[derive(Clone, Debug)]
pub(crate) struct KeyInfo {
    pub id: KeyId,
    pub class: KeyClass,
    /// What its name says its objects are (`None`: a name outside the
    /// storage layout), shared by its revisions.
    pub identity: Option<Arc<KeyIdentity>>,
    /// The run's resource filter leaves it out: nothing of it is stored.
    pub excluded: bool,
    /// A Lease (`coordination.k8s.io`): its renewals mark the clock.
    pub lease: bool,
}

impl KeyInfo {
    /// What the parsed key name tells; `id` is its row.
    pub(crate) fn new(
        id: KeyId,
        parsed: Option<&ParsedKey>,
        decryptor: Option<&Decryptor>,
        kinds: &mut Kinds,
    ) -> KeyInfo {
        KeyInfo {
            id,
            class: KeyClass::of(parsed, decryptor),
            identity: parsed.map(|p| Arc::new(KeyIdentity::of(p, kinds))),
            excluded: false,
            lease: parsed.is_some_and(|p| p.resource == "leases" && p.group == "coordination.k8s.io"),
        }
    }
}

/// An object's semantic content, ready to store once.
pub(crate) struct Semantic {
    /// SHA-256 (HMAC when `keyed`) of its canonical JSON.
    pub hash: Vec<u8>,
    /// Holds sensitive values: its canonical JSON is never stored.
    pub keyed: bool,
    pub fields: Vec<FieldHash>,
    /// The canonical JSON compressed ([`pack`]), unless `keyed`.
    pub canonical: Option<Vec<u8>>,
    /// When `keyed`, its redacted form's JSON, compressed alone.
    pub redacted: Option<Vec<u8>>,
    /// The object's managedFields JSON, compressed.
    pub managed: Option<Vec<u8>>,
    /// What the blobs are compressed against.
    pub against: Against,
    /// The plain blobs, kept when stored in full: they become the base's.
    pub plain: Option<Arc<PlainBlobs>>,
}

/// What a revision's blobs are compressed against.
pub(crate) enum Against {
    /// Nothing: stored in full, it becomes its key's base.
    Nothing,
    /// The key's base, stored before.
    Stored(Arc<Base>),
    /// The plain blobs of the revision before it in its chunk, of the same
    /// key and stored in full (see [`Dict::Chunk`]).
    Chunk,
}

/// The dictionary a revision is prepared with.
pub(crate) enum Dict {
    None,
    /// The key's stored base.
    Stored(Arc<Base>),
    /// An earlier revision of the same key in the same chunk, prepared
    /// without a dictionary: its plain blobs, which the writer stores first.
    Chunk(Arc<PlainBlobs>),
}

/// Plain canonical JSON (empty when keyed) and managedFields JSON.
pub(crate) struct PlainBlobs {
    pub canonical: Plain,
    pub managed: Plain,
}

/// A revision ready for the database.
pub(crate) struct Prepared {
    /// The record, without its value.
    pub record: Record,
    pub value_size: usize,
    pub key: KeyInfo,
    /// Hash of the raw value and its kind (`sha256`, `hmac-sha256`).
    pub value_hash: Option<(Vec<u8>, &'static str)>,
    pub described: Described,
    pub semantic: Option<Semantic>,
    pub facts: ObjectFacts,
    /// JSON of duplicate list entries, when there are any.
    pub duplicates: Option<String>,
}

/// Compresses `content`'s blobs against `dict`.
fn packed(content: Content, dict: Dict) -> Semantic {
    let (canonical_dict, managed_dict): (&[u8], &[u8]) = match &dict {
        Dict::None => (&[], &[]),
        Dict::Stored(b) => (b.canonical.bytes(), b.managed.bytes()),
        Dict::Chunk(p) => (&p.canonical, &p.managed),
    };
    let packed_canonical = (!content.keyed).then(|| pack(&content.canonical, canonical_dict));
    let packed_managed = content.managed.as_ref().map(|m| pack(m, managed_dict));
    let packed_redacted = content.redacted.as_ref().map(|r| pack(r, &[]));
    let (against, plain) = match dict {
        Dict::None => {
            let plain = PlainBlobs {
                canonical: Arc::new(content.canonical),
                managed: Arc::new(content.managed.unwrap_or_default()),
            };
            (Against::Nothing, Some(Arc::new(plain)))
        }
        Dict::Stored(b) => (Against::Stored(b), None),
        Dict::Chunk(_) => (Against::Chunk, None),
    };
    Semantic {
        hash: content.hash,
        keyed: content.keyed,
        fields: content.fields,
        canonical: packed_canonical,
        redacted: packed_redacted,
        managed: packed_managed,
        against,
        plain,
    }
}

/// Prepares one revision; its blobs are compressed against `dict`.
pub(crate) fn prepare(
    record: Record,
    key: KeyInfo,
    dict: Dict,
    config: &FieldConfig,
    hasher: &ValueHasher,
    decryptor: Option<&Decryptor>,
) -> Prepared {
    let i = ingest(
        record,
        &key.class,
        key.identity.as_deref(),
        config,
        hasher,
        decryptor,
    );
    Prepared {
        record: i.record,
        value_size: i.value_size,
        key,
        value_hash: i.value_hash.map(|(h, kind)| (h, kind.as_str())),
        described: i.described,
        semantic: i.content.map(|c| packed(c, dict)),
        facts: i.facts,
        duplicates: i.duplicates,
    }
}
