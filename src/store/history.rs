//! Reading stored revisions back.

use crate::canon::path::FieldPath;
use serde::Serialize;

/// One stored revision of a key, as `history` shows it.
#[derive(Clone, Debug, Default, Serialize)]
pub struct HistoryRow {
    /// The cluster's name, or etcd's cluster id when it has none.
    pub cluster: String,
    /// etcd's cluster id (hex).
    pub cluster_id: String,
    pub mod_revision: i64,
    pub create_revision: i64,
    pub version: i64,
    pub deleted: bool,
    pub lease: i64,
    pub value_size: i64,
    /// SHA-256 of the raw value, or for Secrets an HMAC-SHA-256 under this
    /// database's key (see `value_hash`).
    pub value_sha256: Option<String>,
    /// `sha256` or `hmac-sha256`.
    pub value_hash: Option<String>,
    pub encoding: Option<String>,
    pub encryption: Option<String>,
    pub api_version: Option<String>,
    pub kind: Option<String>,
    pub namespace: Option<String>,
    pub name: Option<String>,
    pub uid: Option<String>,
    pub generation: Option<i64>,
    pub decode_error: Option<String>,
    pub run_id: i64,
    /// SHA-256 of the semantic form (HMAC for objects with sensitive values).
    pub semantic_sha256: Option<String>,
    pub change_class: Option<String>,
    pub change_cause: Option<String>,
    pub changed_paths: Vec<FieldPath>,
    /// Changed path → the field managers that wrote it.
    pub changed_by: std::collections::BTreeMap<FieldPath, Vec<String>>,
    /// The audited request that wrote this revision, when one is known.
    pub written_by: Option<crate::store::audit::WrittenBy>,
    /// When it was written, when known: the writer's `stageTimestamp`.
    pub written_at: Option<String>,
    /// When it was written, as far as the cluster's clock tells: `[from,
    /// to]` in RFC 3339 (`null` where nothing bounds it), both
    /// `written_at` when that is known.
    pub written_between: [Option<String>; 2],
    /// For a key kube-apiserver writes itself (its compactor's, its
    /// leases', its allocators'), which no request writes: who wrote it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub written_by_apiserver: Option<&'static str>,
    /// For a tombstone a run inferred (the delete fell in revisions
    /// compaction removed unread): the revision the delete came after; it
    /// came at or before `mod_revision`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub deleted_after: Option<i64>,
    /// ... and the run that last saw the object live there, unless pruned
    /// (`run_id` is the run that found it gone).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_seen_run: Option<i64>,
    /// Changed paths with old and new values, when asked for (`--diff`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub diff: Option<Vec<FieldChange>>,
}

/// Who wrote a revision of `key` when kube-apiserver writes such keys
/// itself (keys under the default prefix; `compact_rev_key` anywhere).
pub(super) fn apiserver_writer(key: &[u8]) -> Option<&'static str> {
    let key = std::str::from_utf8(key).ok()?;
    let parsed = crate::decode::key::parse_key(key, crate::decode::key::DEFAULT_PREFIX).ok()?;
    parsed.special.map(crate::decode::key::SpecialKey::writer)
}

/// One changed field: its old and new value (`<redacted>` when sensitive).
#[derive(Clone, Debug, Serialize)]
pub struct FieldChange {
    pub path: FieldPath,
    pub old: serde_json::Value,
    pub new: serde_json::Value,
    /// Field managers that wrote the change.
    pub managers: Vec<String>,
}

/// A stored key found by its object's resource, namespace and name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NamedKey {
    pub key: String,
    pub namespace: Option<String>,
    pub name: Option<String>,
}

/// Fills each row's `diff`: its changed paths with the previous revision's
/// (of the same cluster) and its own values, read by `canonical` (a
/// backend's stored canonical value of a semantic hash) or, for content
/// holding sensitive values, by `redacted` (its stored redacted form). A
/// sensitive value, or a field holding one, is `<redacted>`; so is every
/// field of content with no redacted form.
pub(super) fn add_diffs<F, R>(
    rows: &mut [HistoryRow],
    canonical: F,
    redacted: R,
) -> Result<(), super::StoreError>
where
    F: Fn(&[u8]) -> Result<Option<serde_json::Value>, super::StoreError>,
    R: Fn(&[u8]) -> Result<Option<serde_json::Value>, super::StoreError>,
{
    let mut prev = Shown::Absent;
    let mut prev_cluster: Option<String> = None;
    for row in rows.iter_mut() {
        if prev_cluster.as_ref() != Some(&row.cluster_id) {
            prev = Shown::Absent;
            prev_cluster = Some(row.cluster_id.clone());
        }
        let shown = match row.semantic_sha256.as_deref().and_then(crate::hex::unhex) {
            None => Shown::Absent,
            Some(h) => match canonical(&h)? {
                Some(v) => Shown::Whole(v),
                None => match redacted(&h)? {
                    Some(v) => Shown::Redacted(v),
                    None => Shown::Hashes,
                },
            },
        };
        let changes = row
            .changed_paths
            .iter()
            .map(|path| FieldChange {
                path: path.clone(),
                old: prev.at(path),
                new: shown.at(path),
                managers: row.changed_by.get(path).cloned().unwrap_or_default(),
            })
            .collect();
        row.diff = Some(changes);
        prev = shown;
    }
    Ok(())
}

/// What a revision's field diff shows its values from.
enum Shown {
    /// No content: every field absent.
    Absent,
    Whole(serde_json::Value),
    /// Its redacted form.
    Redacted(serde_json::Value),
    /// Content holding sensitive values, with no redacted form.
    Hashes,
}

impl Shown {
    /// The value shown at `path`.
    fn at(&self, path: &FieldPath) -> serde_json::Value {
        let redacted = || serde_json::Value::String("<redacted>".into());
        match self {
            Shown::Absent => serde_json::Value::Null,
            Shown::Whole(v) => path.get(v).cloned().unwrap_or_default(),
            Shown::Redacted(v) => match path.get(v) {
                Some(v) if !crate::canon::redact::placeholder_paths(v).is_empty() => redacted(),
                found => found.cloned().unwrap_or_default(),
            },
            Shown::Hashes => redacted(),
        }
    }
}
