//! The CPU-heavy half of storing a revision, which needs no database:
//! decoding the value, its semantic form and hashes, and the facts the
//! detectors read, and compressing its blobs. Runs on the
//! [`super::pipeline`] workers; the database half stays on the writer's
//! thread.

use super::base::Base;
use super::blob::pack;
use crate::canon::duplicates::duplicate_entries;
use crate::canon::facts::{object_facts_with_spec_hash, ObjectFacts};
use crate::canon::keyed_hash::ValueHasher;
use crate::canon::semantic::FieldConfig;
use crate::canon::semantic::{semantic_with_field_hashes, FieldHash, FIELD_HASH_LEN};
use crate::canon::sensitive::{is_secret, is_sensitive_resource, Secrecy};
use crate::decode::key::{ParsedKey, SpecialKey};
use crate::decode::{decode_value, Outcome};
use crate::decrypt::{self, Decryptor};
use crate::source::Record;
use serde_json::Value;
use sha2::{Digest, Sha256};
use std::sync::Arc;

/// What the writer knows about a key before any of its values is decoded.
#[derive(Clone, Copy, Debug)]
pub(super) struct KeyInfo {
    pub id: i64,
    pub special: Option<SpecialKey>,
    /// How much of its values is sensitive (hashed with the database key,
    /// never stored readable): a Secret's data, or all of a resource the
    /// encryption config encrypts.
    pub secrecy: Secrecy,
    /// The encryption config's rule for its resource.
    pub rule: Option<usize>,
    /// The run's resource filter leaves it out: nothing of it is stored.
    pub excluded: bool,
}

impl KeyInfo {
    /// What the parsed key name tells; `id` is its row.
    pub(super) fn new(id: i64, parsed: Option<&ParsedKey>, decryptor: Option<&Decryptor>) -> KeyInfo {
        let rule = parsed
            .zip(decryptor)
            .and_then(|(p, d)| d.rule_for(&p.group, &p.resource));
        let secrecy = if decryptor.is_some_and(|d| d.encrypts(rule)) {
            Secrecy::Everything
        } else if parsed.is_some_and(|p| is_sensitive_resource(&p.group, &p.resource)) {
            Secrecy::Secret
        } else {
            Secrecy::Plain
        };
        KeyInfo {
            id,
            special: parsed.and_then(|p| p.special),
            secrecy,
            rule,
            excluded: false,
        }
    }
}

/// The columns decoding a value fills.
#[derive(Default)]
pub(super) struct Described {
    pub encoding: Option<String>,
    pub encryption: Option<String>,
    pub api_version: Option<String>,
    pub kind: Option<String>,
    pub namespace: Option<String>,
    pub name: Option<String>,
    pub uid: Option<String>,
    pub generation: Option<i64>,
    pub error: Option<String>,
}

/// An object's semantic content, ready to store once.
pub(super) struct Semantic {
    /// SHA-256 (HMAC when `keyed`) of its canonical JSON.
    pub hash: Vec<u8>,
    /// Holds sensitive values: its canonical JSON is never stored.
    pub keyed: bool,
    pub fields: Vec<FieldHash>,
    /// The canonical JSON compressed ([`pack`]), unless `keyed`.
    pub canonical: Option<Vec<u8>>,
    /// The object's managedFields JSON, compressed.
    pub managed: Option<Vec<u8>>,
    /// What the blobs are compressed against.
    pub against: Against,
    /// The plain blobs, kept when stored in full: they become the base's.
    pub plain: Option<Arc<PlainBlobs>>,
}

/// What a revision's blobs are compressed against.
pub(super) enum Against {
    /// Nothing: stored in full, it becomes its key's base.
    Nothing,
    /// The key's base, stored before.
    Stored(Arc<Base>),
    /// The plain blobs of the revision before it in its chunk, of the same
    /// key and stored in full (see [`Dict::Chunk`]).
    Chunk,
}

/// The dictionary a revision is prepared with.
pub(super) enum Dict {
    None,
    /// The key's stored base.
    Stored(Arc<Base>),
    /// An earlier revision of the same key in the same chunk, prepared
    /// without a dictionary: its plain blobs, which the writer stores first.
    Chunk(Arc<PlainBlobs>),
}

/// Plain canonical JSON (empty when keyed) and managedFields JSON.
pub(super) struct PlainBlobs {
    pub canonical: Vec<u8>,
    pub managed: Vec<u8>,
}

/// A revision ready for the database.
pub(super) struct Prepared {
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

/// The encoding of etcd's compaction key, whose value is a plain number.
pub(super) const TEXT_ENCODING: &str = "text";

/// What an encrypted value is when it cannot be read: its provider and
/// key, and why, when decrypting was tried.
fn encrypted(label: Option<String>, error: Option<String>) -> Described {
    Described {
        encoding: Some("encrypted".into()),
        encryption: label,
        error,
        ..Described::default()
    }
}

fn describe(record: &Record, key: &KeyInfo, decryptor: Option<&Decryptor>) -> (Described, Option<Value>) {
    if key.special == Some(SpecialKey::CompactRevision) {
        let text = Described {
            encoding: Some(TEXT_ENCODING.into()),
            ..Described::default()
        };
        return (text, None);
    }
    let stored = decrypt::label(&record.value);
    let (value, encryption) = match (&stored, decryptor) {
        (None, _) => (std::borrow::Cow::Borrowed(&record.value[..]), None),
        (Some(_), None) => return (encrypted(stored, None), None),
        (Some(_), Some(d)) => match d.decrypt(key.rule, &record.key, &record.value) {
            Ok(Some(plain)) => (std::borrow::Cow::Owned(plain.bytes), Some(plain.label)),
            Ok(None) => (std::borrow::Cow::Borrowed(&record.value[..]), None),
            Err(e) => return (encrypted(d.label(key.rule, &record.value), Some(e.0)), None),
        },
    };
    match decode_value(&value) {
        Ok(Outcome::Decoded(d)) => {
            let meta = d.object.get("metadata");
            let text = |k: &str| {
                meta.and_then(|m| m.get(k))
                    .and_then(|v| v.as_str())
                    .filter(|v| !v.is_empty())
                    .map(str::to_string)
            };
            let described = Described {
                encoding: Some(d.encoding.as_str().into()),
                namespace: text("namespace"),
                name: text("name"),
                uid: text("uid"),
                generation: meta.and_then(|m| m.get("generation")).and_then(|v| v.as_i64()),
                api_version: Some(d.api_version),
                kind: Some(d.kind),
                encryption,
                ..Described::default()
            };
            (described, Some(d.object))
        }
        // Encrypted inside a decrypted value: not a layout the apiserver writes.
        Ok(Outcome::Encrypted(_)) => (encrypted(decrypt::label(&value), encryption), None),
        Err(e) => {
            let described = Described {
                encoding: e.encoding.map(|enc| enc.as_str().to_string()),
                encryption,
                error: Some(match e.offset {
                    Some(o) if !e.reason.contains("byte offset") => format!("{} (byte offset {o})", e.reason),
                    _ => e.reason,
                }),
                ..Described::default()
            };
            (described, None)
        }
    }
}

fn semantic(
    object: Value,
    secrecy: Secrecy,
    dict: Dict,
    config: &FieldConfig,
    hasher: &ValueHasher,
) -> Semantic {
    let managed = object
        .pointer("/metadata/managedFields")
        .map(|m| serde_json::to_vec(m).expect("JSON values serialize"));
    let keyed = config.sensitivity.covers_any(secrecy, &object);
    let (canonical, fields) =
        semantic_with_field_hashes(&object, config.depth, secrecy, &config.sensitivity, hasher);
    let (canonical_dict, managed_dict): (&[u8], &[u8]) = match &dict {
        Dict::None => (&[], &[]),
        Dict::Stored(b) => (b.canonical.bytes(), b.managed.bytes()),
        Dict::Chunk(p) => (&p.canonical, &p.managed),
    };
    let hash = hasher.hash(&canonical, keyed).0;
    let packed_canonical = (!keyed).then(|| pack(&canonical, canonical_dict));
    let packed_managed = managed.as_ref().map(|m| pack(m, managed_dict));
    let (against, plain) = match dict {
        Dict::None => {
            let plain = PlainBlobs {
                canonical: if keyed { Vec::new() } else { canonical },
                managed: managed.unwrap_or_default(),
            };
            (Against::Nothing, Some(Arc::new(plain)))
        }
        Dict::Stored(b) => (Against::Stored(b), None),
        Dict::Chunk(_) => (Against::Chunk, None),
    };
    Semantic {
        hash,
        keyed,
        fields,
        canonical: packed_canonical,
        managed: packed_managed,
        against,
        plain,
    }
}

/// What the detectors read, the duplicate entries, and the semantic content.
fn analyse(
    object: Value,
    secrecy: Secrecy,
    dict: Dict,
    config: &FieldConfig,
    hasher: &ValueHasher,
) -> (ObjectFacts, Option<String>, Semantic) {
    let duplicates = Some(duplicate_entries(&object))
        .filter(|d| !d.is_empty())
        .map(|d| serde_json::to_string(&d).expect("JSON"));
    let has_spec = object.get("spec").is_some();
    let mut facts = object_facts_with_spec_hash(&object, None);
    let secrecy = match secrecy {
        Secrecy::Plain if is_secret(&object) => Secrecy::Secret,
        s => s,
    };
    let semantic = semantic(object, secrecy, dict, config, hasher);
    // The field hash of `spec` is the spec hash; an empty spec has none.
    facts.spec_hash = has_spec.then(
        || match semantic.fields.iter().find(|(p, _)| p.as_str() == "spec") {
            Some((_, h)) => h.to_vec(),
            None => Sha256::digest(b"{}")[..FIELD_HASH_LEN].to_vec(),
        },
    );
    (facts, duplicates, semantic)
}

/// Prepares one revision; its blobs are compressed against `dict`.
pub(super) fn prepare(
    record: Record,
    key: KeyInfo,
    dict: Dict,
    config: &FieldConfig,
    hasher: &ValueHasher,
    decryptor: Option<&Decryptor>,
) -> Prepared {
    let (described, object) = match record.deleted {
        true => (Described::default(), None),
        false => describe(&record, &key, decryptor),
    };
    let value_hash = (!record.deleted).then(|| {
        let (h, kind) = hasher.hash(&record.value, key.secrecy != Secrecy::Plain);
        (h, kind.as_str())
    });
    let (facts, duplicates, semantic) = match object {
        Some(o) => {
            let (facts, duplicates, semantic) = analyse(o, key.secrecy, dict, config, hasher);
            (facts, duplicates, Some(semantic))
        }
        None => (ObjectFacts::default(), None, None),
    };
    let value_size = record.value.len();
    Prepared {
        record: Record {
            value: Vec::new(),
            ..record
        },
        value_size,
        key,
        value_hash,
        described,
        semantic,
        facts,
        duplicates,
    }
}
