//! Change classes: what a revision changed against the previous revision of
//! the same key generation.

use super::path::FieldPath;
use super::semantic::FIELD_HASH_LEN;
use crate::unknown::{find, UnknownName};
use serde::Serialize;
use std::collections::BTreeMap;

/// What kind of write a revision was.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum ChangeClass {
    /// The first revision of a key generation.
    Create,
    Delete,
    /// Byte-identical to the previous value.
    Rewrite,
    /// Different bytes, same content.
    EncodingOnly,
    MetadataOnly,
    StatusOnly,
    /// Desired state changed (spec, or the content of kinds without one,
    /// such as a ConfigMap's data), possibly with metadata.
    Spec,
    /// Desired state and status changed together.
    Mixed,
    /// The previous revision of this generation is not stored (history
    /// starts after it), so there is nothing to compare with; or it is,
    /// but writes the database does not hold came between (its version
    /// skips), and the content is the same as the stored one's: whether
    /// this write changed anything cannot be known.
    FirstSeen,
    /// The content cannot be compared (encrypted or undecodable value).
    Unknown,
}

/// Why an `encoding-only` (or `unknown`) revision's bytes changed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum ChangeCause {
    /// Another encoding (JSON, protobuf, CBOR, YAML).
    MediaType,
    /// Another storage apiVersion of the same group and kind.
    StorageVersion,
    /// Encrypted, decrypted or re-encrypted (provider or key changed).
    Encryption,
    /// Same encoding and version, different bytes (field order, defaults).
    Serialization,
    /// (`unknown` only) The two revisions' keyed hashes are under different
    /// hash keys (`--new-hash-key` between them), so they do not compare.
    HashKey,
}

impl ChangeClass {
    /// Every class.
    pub const ALL: [ChangeClass; 10] = [
        ChangeClass::Create,
        ChangeClass::Delete,
        ChangeClass::Rewrite,
        ChangeClass::EncodingOnly,
        ChangeClass::MetadataOnly,
        ChangeClass::StatusOnly,
        ChangeClass::Spec,
        ChangeClass::Mixed,
        ChangeClass::FirstSeen,
        ChangeClass::Unknown,
    ];

    /// The class [`ChangeClass::as_str`] names.
    pub fn parse(name: &str) -> Result<ChangeClass, UnknownName> {
        find(&ChangeClass::ALL, ChangeClass::as_str, "a change class", name)
    }

    pub fn as_str(self) -> &'static str {
        match self {
            ChangeClass::Create => "create",
            ChangeClass::Delete => "delete",
            ChangeClass::Rewrite => "rewrite",
            ChangeClass::EncodingOnly => "encoding-only",
            ChangeClass::MetadataOnly => "metadata-only",
            ChangeClass::StatusOnly => "status-only",
            ChangeClass::Spec => "spec",
            ChangeClass::Mixed => "mixed",
            ChangeClass::FirstSeen => "first-seen",
            ChangeClass::Unknown => "unknown",
        }
    }
}

impl ChangeCause {
    /// Every cause.
    pub const ALL: [ChangeCause; 5] = [
        ChangeCause::MediaType,
        ChangeCause::StorageVersion,
        ChangeCause::Encryption,
        ChangeCause::Serialization,
        ChangeCause::HashKey,
    ];

    /// The cause [`ChangeCause::as_str`] names.
    pub fn parse(name: &str) -> Result<ChangeCause, UnknownName> {
        find(&ChangeCause::ALL, ChangeCause::as_str, "a change cause", name)
    }

    pub fn as_str(self) -> &'static str {
        match self {
            ChangeCause::MediaType => "media-type",
            ChangeCause::StorageVersion => "storage-version",
            ChangeCause::Encryption => "encryption",
            ChangeCause::Serialization => "serialization",
            ChangeCause::HashKey => "hash-key",
        }
    }
}

/// What classification needs to know about one revision.
#[derive(Clone, Debug, Default)]
pub struct Facts {
    pub deleted: bool,
    pub version: i64,
    pub value_hash: Option<Vec<u8>>,
    pub semantic_hash: Option<Vec<u8>>,
    pub encoding: Option<String>,
    pub api_version: Option<String>,
    pub encryption: Option<String>,
    /// Field path → hash, when the value decoded.
    pub fields: Option<BTreeMap<FieldPath, [u8; FIELD_HASH_LEN]>>,
    /// The id of the key its keyed hashes are under, if it has any.
    pub hash_key: Option<String>,
}

/// A revision's change.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Change {
    pub class: ChangeClass,
    pub cause: Option<ChangeCause>,
    /// Field paths whose value changed, appeared or disappeared.
    pub changed_paths: Vec<FieldPath>,
}

impl Change {
    fn of(class: ChangeClass) -> Change {
        Change {
            class,
            cause: None,
            changed_paths: Vec::new(),
        }
    }
}

/// The paths of `paths` that have none of the others under them:
/// `spec.replicas` says more than `spec`.
pub fn deepest_paths(paths: &[FieldPath]) -> Vec<FieldPath> {
    paths
        .iter()
        .filter(|p| !paths.iter().any(|q| q.is_under(p)))
        .cloned()
        .collect()
}

/// Classifies `cur` against `prev`, the previous stored revision of the same
/// key generation (`None` when there is none).
pub fn classify(prev: Option<&Facts>, cur: &Facts) -> Change {
    if cur.deleted {
        return Change::of(ChangeClass::Delete);
    }
    let Some(prev) = prev.filter(|p| !p.deleted) else {
        return Change::of(if cur.version <= 1 {
            ChangeClass::Create
        } else {
            ChangeClass::FirstSeen
        });
    };
    if prev.hash_key.is_some() && cur.hash_key.is_some() && prev.hash_key != cur.hash_key {
        return Change {
            class: ChangeClass::Unknown,
            cause: Some(ChangeCause::HashKey),
            changed_paths: Vec::new(),
        };
    }
    // etcd counts a key's writes: a version that skips means writes the
    // database does not hold (a compaction gap, a prune) came between, so
    // content equal to the stored one's is no rewrite or re-encode: those
    // writes may have changed it and this one changed it back.
    let consecutive = prev.version == 0 || cur.version == prev.version + 1;
    if prev.value_hash.is_some() && prev.value_hash == cur.value_hash {
        return Change::of(if consecutive {
            ChangeClass::Rewrite
        } else {
            ChangeClass::FirstSeen
        });
    }
    let encryption_changed = prev.encryption != cur.encryption;
    let (Some(a), Some(b)) = (&prev.semantic_hash, &cur.semantic_hash) else {
        return Change {
            class: ChangeClass::Unknown,
            cause: encryption_changed.then_some(ChangeCause::Encryption),
            changed_paths: Vec::new(),
        };
    };
    if a == b && !consecutive {
        return Change::of(ChangeClass::FirstSeen);
    }
    if a == b {
        let cause = if encryption_changed {
            ChangeCause::Encryption
        } else if prev.encoding != cur.encoding {
            ChangeCause::MediaType
        } else if prev.api_version != cur.api_version {
            ChangeCause::StorageVersion
        } else {
            ChangeCause::Serialization
        };
        return Change {
            class: ChangeClass::EncodingOnly,
            cause: Some(cause),
            changed_paths: Vec::new(),
        };
    }
    let empty = BTreeMap::new();
    let (old, new) = (
        prev.fields.as_ref().unwrap_or(&empty),
        cur.fields.as_ref().unwrap_or(&empty),
    );
    let mut changed: Vec<FieldPath> = new
        .iter()
        .filter(|(p, h)| old.get(*p) != Some(h))
        .map(|(p, _)| p.clone())
        .collect();
    changed.extend(old.keys().filter(|p| !new.contains_key(*p)).cloned());
    changed.sort();
    // Keep the deepest paths: `spec.replicas` says more than `spec`.
    let deepest = deepest_paths(&changed);
    let status = deepest.iter().any(|p| p.top().as_deref() == Some("status"));
    let content = deepest
        .iter()
        .any(|p| !matches!(p.top().as_deref(), Some("metadata" | "status")));
    let class = match (content, status) {
        (true, true) => ChangeClass::Mixed,
        (true, false) => ChangeClass::Spec,
        (false, true) => ChangeClass::StatusOnly,
        (false, false) => ChangeClass::MetadataOnly,
    };
    Change {
        class,
        cause: None,
        changed_paths: deepest,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `cur` classified as the write after `prev` (its version one more).
    fn then(prev: &Facts, cur: &Facts) -> Change {
        classify(
            Some(prev),
            &Facts {
                version: prev.version + 1,
                ..cur.clone()
            },
        )
    }

    fn facts(value: &[u8], semantic: &[u8], fields: &[(&str, u8)]) -> Facts {
        Facts {
            version: 2,
            value_hash: Some(value.to_vec()),
            semantic_hash: Some(semantic.to_vec()),
            encoding: Some("protobuf".into()),
            api_version: Some("v1".into()),
            fields: Some(
                fields
                    .iter()
                    .map(|(p, h)| (FieldPath::parse(p).unwrap(), [*h; 16]))
                    .collect(),
            ),
            ..Facts::default()
        }
    }

    #[test]
    fn classes() {
        let base = facts(
            b"a",
            b"s1",
            &[
                ("metadata", 1),
                ("metadata.labels", 1),
                ("spec", 1),
                ("spec.replicas", 1),
                ("status", 1),
                ("status.conditions", 1),
            ],
        );
        assert_eq!(
            classify(
                None,
                &Facts {
                    version: 1,
                    ..base.clone()
                }
            )
            .class,
            ChangeClass::Create
        );
        assert_eq!(classify(None, &base).class, ChangeClass::FirstSeen);
        assert_eq!(then(&base, &base).class, ChangeClass::Rewrite);
        assert_eq!(
            classify(
                Some(&base),
                &Facts {
                    deleted: true,
                    ..Facts::default()
                }
            )
            .class,
            ChangeClass::Delete
        );

        let json = Facts {
            value_hash: Some(b"b".to_vec()),
            encoding: Some("json".into()),
            ..base.clone()
        };
        assert_eq!(then(&json, &base).cause, Some(ChangeCause::MediaType));
        let v2 = Facts {
            value_hash: Some(b"c".to_vec()),
            api_version: Some("v2".into()),
            ..base.clone()
        };
        assert_eq!(
            (then(&base, &v2).class, then(&base, &v2).cause),
            (ChangeClass::EncodingOnly, Some(ChangeCause::StorageVersion))
        );

        let labels = facts(
            b"d",
            b"s2",
            &[
                ("metadata", 2),
                ("metadata.labels", 2),
                ("spec", 1),
                ("spec.replicas", 1),
                ("status", 1),
                ("status.conditions", 1),
            ],
        );
        let c = then(&base, &labels);
        assert_eq!(
            (c.class, c.changed_paths),
            (
                ChangeClass::MetadataOnly,
                vec![FieldPath::parse("metadata.labels").unwrap()]
            )
        );
        let cond = facts(
            b"e",
            b"s3",
            &[
                ("metadata", 2),
                ("metadata.labels", 2),
                ("spec", 1),
                ("spec.replicas", 1),
                ("status", 2),
                ("status.conditions", 2),
            ],
        );
        assert_eq!(then(&labels, &cond).class, ChangeClass::StatusOnly);
        let replicas = facts(
            b"f",
            b"s4",
            &[
                ("metadata", 3),
                ("metadata.labels", 2),
                ("spec", 2),
                ("spec.replicas", 2),
                ("status", 2),
                ("status.conditions", 2),
            ],
        );
        let c = then(&cond, &replicas);
        assert_eq!(
            (c.class, c.changed_paths),
            (
                ChangeClass::Spec,
                vec![
                    FieldPath::field("metadata"),
                    FieldPath::parse("spec.replicas").unwrap()
                ]
            )
        );
        let both = facts(
            b"g",
            b"s5",
            &[
                ("metadata", 3),
                ("metadata.labels", 2),
                ("spec", 3),
                ("spec.replicas", 3),
                ("status", 3),
                ("status.conditions", 3),
            ],
        );
        assert_eq!(then(&replicas, &both).class, ChangeClass::Mixed);
        let encrypted = Facts {
            semantic_hash: None,
            fields: None,
            encryption: Some("aescbc:v1:k".into()),
            ..base.clone()
        };
        let c = then(
            &base,
            &Facts {
                value_hash: Some(b"z".to_vec()),
                ..encrypted
            },
        );
        assert_eq!(
            (c.class, c.cause),
            (ChangeClass::Unknown, Some(ChangeCause::Encryption))
        );
    }

    /// A version that skips means writes the database does not hold came
    /// between: content equal to the stored one's is no rewrite or
    /// re-encode, and changed content is still what changed since.
    #[test]
    fn equal_content_after_writes_not_held_is_not_claimed_unchanged() {
        let base = facts(b"a", b"s1", &[("spec", 1)]);
        let later = |f: Facts| Facts {
            version: base.version + 3,
            ..f
        };
        assert_eq!(
            classify(Some(&base), &later(base.clone())).class,
            ChangeClass::FirstSeen
        );
        let reencoded = Facts {
            value_hash: Some(b"b".to_vec()),
            encoding: Some("json".into()),
            ..base.clone()
        };
        assert_eq!(
            classify(Some(&base), &later(reencoded)).class,
            ChangeClass::FirstSeen
        );
        let c = classify(Some(&base), &later(facts(b"c", b"s2", &[("spec", 2)])));
        assert_eq!((c.class, c.changed_paths.len()), (ChangeClass::Spec, 1));
    }

    #[test]
    fn keyed_hashes_under_different_keys_claim_neither_equal_nor_different() {
        let secret = |value: &[u8], key: &str| Facts {
            hash_key: Some(key.into()),
            ..facts(value, value, &[("data", value[0])])
        };
        let same_key = then(&secret(b"a", "k1"), &secret(b"a", "k1"));
        assert_eq!(same_key.class, ChangeClass::Rewrite);
        for cur in [secret(b"a", "k2"), secret(b"b", "k2")] {
            let c = then(&secret(b"a", "k1"), &cur);
            assert_eq!(
                (c.class, c.cause, c.changed_paths.len()),
                (ChangeClass::Unknown, Some(ChangeCause::HashKey), 0)
            );
        }
    }
}
