//! Opening one stored value: what its key says about it, then decrypting
//! (when the cluster's encryption config is given) and decoding it. One path
//! for runs, `decode` and `get`.

use crate::canon::sensitive::{is_sensitive_resource, Secrecy};
use crate::decode::envelope::EncryptedInfo;
use crate::decode::key::{ParsedKey, SpecialKey};
use crate::decode::{decode_into, Decoded, Outcome, Undecodable};
use crate::decrypt::{self, DecryptError, Decryptor};
use crate::json_sink::{JsonSink, TreeBuilder};
use serde_json::Value;
use std::borrow::Cow;

/// What a key's name tells about its values before any is opened.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct KeyClass {
    pub special: Option<SpecialKey>,
    /// How much of its values is sensitive (hashed with the hash key, never
    /// stored readable): a Secret's data, or all of a resource the
    /// encryption config encrypts.
    pub secrecy: Secrecy,
    /// The encryption config's rule for its resource.
    pub rule: Option<usize>,
}

impl KeyClass {
    /// The class of a key named `parsed` (`None`: a name outside the
    /// storage layout) under `decryptor`'s config.
    pub fn of(parsed: Option<&ParsedKey>, decryptor: Option<&Decryptor>) -> KeyClass {
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
        KeyClass {
            special: parsed.and_then(|p| p.special),
            secrecy,
            rule,
        }
    }
}

/// A stored value, opened; `O` is what a decoded value's object is (see
/// [`Decoded`]).
#[derive(Debug)]
pub enum Opened<O = Value> {
    /// etcd's compaction key, whose value is a plain revision number.
    CompactRevision(String),
    /// Encrypted at rest and not decrypted: no config was given (`error`
    /// is `None`), or no configured key opened it.
    Encrypted {
        /// The provider and key it names (`aesgcm:key1`), with the config's
        /// key names when there is a config.
        label: Option<String>,
        info: Option<EncryptedInfo>,
        error: Option<DecryptError>,
    },
    /// Decoded, after decrypting when it was encrypted.
    Decoded {
        decoded: Box<Decoded<O>>,
        /// The provider and key it was decrypted with.
        encryption: Option<String>,
    },
    /// Plain (or decrypted) bytes that do not decode.
    Undecodable {
        error: Undecodable,
        encryption: Option<String>,
    },
}

/// Opens `value`, stored at `etcd_key` (the authenticated data of its
/// encryption) under a key of `class`.
pub fn open(class: &KeyClass, etcd_key: &[u8], value: &[u8], decryptor: Option<&Decryptor>) -> Opened {
    let mut tree = TreeBuilder::default();
    match open_into(class, etcd_key, value, decryptor, &mut tree) {
        Opened::CompactRevision(text) => Opened::CompactRevision(text),
        Opened::Encrypted { label, info, error } => Opened::Encrypted { label, info, error },
        Opened::Decoded { decoded, encryption } => Opened::Decoded {
            decoded: Box::new((*decoded).with(tree.finish())),
            encryption,
        },
        Opened::Undecodable { error, encryption } => Opened::Undecodable { error, encryption },
    }
}

/// [`open`], sending a decoded object into `sink` (see [`decode_into`]).
pub fn open_into<S: JsonSink>(
    class: &KeyClass,
    etcd_key: &[u8],
    value: &[u8],
    decryptor: Option<&Decryptor>,
    sink: &mut S,
) -> Opened<()> {
    if class.special == Some(SpecialKey::CompactRevision) {
        return Opened::CompactRevision(String::from_utf8_lossy(value).into_owned());
    }
    let (plain, encryption) = match (decrypt::label(value), decryptor) {
        (None, _) | (Some(_), None) => (Cow::Borrowed(value), None),
        (Some(_), Some(d)) => match d.decrypt(class.rule, etcd_key, value) {
            Ok(Some(p)) => (Cow::Owned(p.bytes), Some(p.label)),
            Ok(None) => (Cow::Borrowed(value), None),
            Err(error) => {
                return Opened::Encrypted {
                    label: d.label(class.rule, value),
                    info: None,
                    error: Some(error),
                }
            }
        },
    };
    match decode_into(&plain, sink) {
        Ok(Outcome::Decoded(decoded)) => Opened::Decoded {
            decoded: Box::new(decoded),
            encryption,
        },
        // Without a config; or encrypted inside a decrypted value, which is
        // not a layout the apiserver writes.
        Ok(Outcome::Encrypted(info)) => Opened::Encrypted {
            label: decrypt::label(&plain),
            info: Some(info),
            error: None,
        },
        Err(error) => Opened::Undecodable { error, encryption },
    }
}
