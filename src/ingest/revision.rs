//! One record through the whole stage: its value opened, the hash of its
//! raw bytes, the columns opening fills, and for an object its semantic
//! content (canonical JSON, semantic and field hashes), the facts the
//! detectors read and its repeated list entries. Needs no database: it runs
//! on the workers (see [`super::workers`]).

use super::foreign::{evidence, KeyIdentity};
use super::open::{open_into, KeyClass, Opened};
use super::written::{ObjectWriter, Written};
use crate::canon::duplicates::duplicate_entries;
use crate::canon::facts::{object_facts_with_spec_hash, ObjectFacts};
use crate::canon::keyed_hash::{HashKind, ValueHasher};
use crate::canon::redact::redacted_form;
use crate::canon::semantic::{hash_spans, parse_form, FieldConfig, FieldHash, FIELD_HASH_LEN};
use crate::canon::sensitive::{is_secret, Secrecy};
use crate::decode::envelope::Encoding;
use crate::decode::Undecodable;
use crate::decrypt::Decryptor;
use crate::source::Record;
use serde_json::Value;
use sha2::{Digest, Sha256};

/// The encoding recorded for etcd's compaction key, whose value is a plain
/// number.
pub const TEXT_ENCODING: &str = "text";

/// The columns opening a value fills.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Described {
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

/// An object's semantic content.
pub struct Content {
    /// SHA-256 (HMAC when `keyed`) of its canonical JSON.
    pub hash: Vec<u8>,
    /// Holds sensitive values: its canonical JSON is never stored.
    pub keyed: bool,
    pub fields: Vec<FieldHash>,
    /// The canonical JSON of its semantic form; empty when `keyed`.
    pub canonical: Vec<u8>,
    /// When `keyed`, the JSON of its redacted form (see
    /// [`crate::canon::redact`]), unless every value is sensitive.
    pub redacted: Option<Vec<u8>>,
    /// Its managedFields JSON.
    pub managed: Option<Vec<u8>>,
}

/// A record through the stage.
pub struct Ingested {
    /// The record, without its value.
    pub record: Record,
    pub value_size: usize,
    /// Hash of the raw value and its kind; `None` for a tombstone.
    pub value_hash: Option<(Vec<u8>, HashKind)>,
    pub described: Described,
    pub content: Option<Content>,
    pub facts: ObjectFacts,
    /// JSON of repeated list entries, when there are any.
    pub duplicates: Option<String>,
}

/// How an undecodable value's reason is recorded: with the byte offset of
/// the fault when the reason does not say it.
pub fn reason(e: &Undecodable) -> String {
    match e.offset {
        Some(o) if !e.reason.contains("byte offset") => format!("{} (byte offset {o})", e.reason),
        _ => e.reason.clone(),
    }
}

/// The columns of an opened value, whose object, when it decoded, has
/// `view` (see [`crate::canon::view`]); whether it decoded.
pub fn describe(opened: Opened<()>, view: &Value) -> (Described, bool) {
    match opened {
        Opened::CompactRevision(_) => (
            Described {
                encoding: Some(TEXT_ENCODING.into()),
                ..Described::default()
            },
            false,
        ),
        Opened::Encrypted { label, error, .. } => (
            Described {
                encoding: Some(Encoding::Encrypted.as_str().into()),
                encryption: label,
                error: error.map(|e| e.to_string()),
                ..Described::default()
            },
            false,
        ),
        Opened::Decoded { decoded, encryption } => {
            let d = *decoded;
            let meta = view.get("metadata");
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
            (described, true)
        }
        Opened::Undecodable { error, encryption } => (
            Described {
                encoding: error.encoding.map(|enc| enc.as_str().to_string()),
                encryption,
                error: Some(reason(&error)),
                ..Described::default()
            },
            false,
        ),
    }
}

fn content(written: Written, secrecy: Secrecy, config: &FieldConfig, hasher: &ValueHasher) -> Content {
    let Written {
        canonical,
        spans,
        view,
    } = written;
    let managed = view
        .get("metadata")
        .and_then(|m| m.get("managedFields"))
        .map(|m| serde_json::to_vec(m).expect("JSON values serialize"));
    let keyed = config.sensitivity.covers_any(secrecy, &canonical);
    let fields = hash_spans(&canonical, spans, secrecy, &config.sensitivity, hasher);
    let hash = hasher.hash(&canonical, keyed).0;
    let redacted = keyed
        .then(|| redacted_form(parse_form(&canonical), secrecy, &config.sensitivity, hasher))
        .flatten()
        .map(|form| serde_json::to_vec(&form).expect("JSON values serialize"));
    Content {
        hash,
        keyed,
        fields,
        canonical: if keyed { Vec::new() } else { canonical },
        redacted,
        managed,
    }
}

/// What the detectors read, the repeated entries, and the semantic content
/// of an object `written`.
fn analyse(
    written: Written,
    secrecy: Secrecy,
    config: &FieldConfig,
    hasher: &ValueHasher,
) -> (ObjectFacts, Option<String>, Content) {
    let view = &written.view;
    let duplicates = Some(duplicate_entries(view))
        .filter(|d| !d.is_empty())
        .map(|d| serde_json::to_string(&d).expect("JSON"));
    let has_spec = view.get("spec").is_some();
    let mut facts = object_facts_with_spec_hash(view, None);
    let secrecy = match secrecy {
        Secrecy::Plain if is_secret(view) => Secrecy::Secret,
        s => s,
    };
    let content = content(written, secrecy, config, hasher);
    // The field hash of `spec` is the spec hash; an empty spec has none.
    facts.spec_hash = has_spec.then(
        || match content.fields.iter().find(|(p, _)| p.as_str() == "spec") {
            Some((_, h)) => h.to_vec(),
            None => Sha256::digest(b"{}")[..FIELD_HASH_LEN].to_vec(),
        },
    );
    (facts, duplicates, content)
}

/// Takes `record`, stored under a key of `class` whose name says
/// `identity` (`None`: a name outside the storage layout), through the
/// stage.
pub fn ingest(
    record: Record,
    class: &KeyClass,
    identity: Option<&KeyIdentity>,
    config: &FieldConfig,
    hasher: &ValueHasher,
    decryptor: Option<&Decryptor>,
) -> Ingested {
    let mut writer = ObjectWriter::for_value(config.depth, record.value.len());
    let opened = match record.deleted {
        true => None,
        false => Some(open_into(
            class,
            &record.key,
            &record.value,
            decryptor,
            &mut writer,
        )),
    };
    let written = writer.finish();
    let foreign = match &opened {
        Some(Opened::Decoded { decoded, encryption }) => {
            let plain = encryption.is_none().then_some(record.value.as_slice());
            let create = record.version == 1 || record.mod_revision == record.create_revision;
            Some(evidence(identity, decoded, plain, create, &written.view))
                .filter(|found| !found.is_empty())
                .map(|found| serde_json::to_string(&found).expect("JSON values serialize"))
        }
        _ => None,
    };
    let (described, decoded) = match opened {
        None => (Described::default(), false),
        Some(opened) => describe(opened, &written.view),
    };
    let value_hash = (!record.deleted).then(|| hasher.hash(&record.value, class.secrecy != Secrecy::Plain));
    let (facts, duplicates, content) = match decoded {
        true => {
            let (facts, duplicates, content) = analyse(written, class.secrecy, config, hasher);
            (facts, duplicates, Some(content))
        }
        false => (ObjectFacts::default(), None, None),
    };
    let facts = ObjectFacts { foreign, ..facts };
    let value_size = record.value.len();
    Ingested {
        record: Record {
            value: Vec::new(),
            ..record
        },
        value_size,
        value_hash,
        described,
        content,
        facts,
        duplicates,
    }
}
