//! Reading stored revisions back.

use super::audit::{written_by, WRITTEN_BY_COLUMNS};
use super::reader::{ClusterReads, HistoryReads};
use super::sql::{first_row, Cursor, Sql};
use super::tables::Cell;
use super::StoreError;
use crate::canon::path::FieldPath;
use crate::source::Revision;
use crate::store::ClusterId;
use serde::Serialize;

/// One stored revision of a key, as `history` shows it.
#[derive(Clone, Debug, Default, Serialize)]
pub struct HistoryRow {
    /// The cluster's name, or etcd's cluster id when it has none.
    pub cluster: String,
    /// etcd's cluster id (hex).
    pub cluster_id: String,
    pub mod_revision: Revision,
    pub create_revision: Revision,
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
    pub deleted_after: Option<Revision>,
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

/// What [`HistoryReads::history`] selects before the writer's columns.
const HISTORY_COLUMNS: &str =
    "c.id, c.etcd_cluster_id, r.mod_revision, r.create_revision, r.version, r.deleted, \
     r.lease, r.value_size, r.value_sha256, r.value_hash, r.encoding, r.encryption, r.api_version, r.kind, \
     r.namespace, r.name, r.uid, r.generation, r.decode_error, r.run_id, r.semantic_sha256, r.change_class, \
     r.change_cause, r.changed_paths, r.changed_by";

impl<T: Sql + ClusterReads + ?Sized> HistoryReads for T {
    /// Each revision with the clock's bounds of when it was written, read
    /// with the row rather than by two queries a row.
    fn history(&self, key: &[u8], cluster: Option<ClusterId>) -> Result<Vec<HistoryRow>, StoreError> {
        let labels: std::collections::HashMap<ClusterId, String> = self
            .clusters()?
            .into_iter()
            .map(|c| (c.row, c.label().to_string()))
            .collect();
        let sql = format!(
            "SELECT {HISTORY_COLUMNS}, {WRITTEN_BY_COLUMNS}, r.deleted_after, \
             (SELECT max(s.id) FROM runs s WHERE s.cluster_id = c.id AND s.status = 'complete' \
              AND s.head_revision = r.deleted_after), \
             (SELECT e.earliest FROM clock_envelope e WHERE e.cluster_id = c.id AND e.revision <= r.mod_revision \
              ORDER BY e.revision DESC LIMIT 1), \
             (SELECT e.latest FROM clock_envelope e WHERE e.cluster_id = c.id AND e.revision >= r.mod_revision \
              ORDER BY e.revision LIMIT 1) \
             FROM revisions r JOIN keys k ON k.id = r.key_id JOIN clusters c ON c.id = k.cluster_id \
             LEFT JOIN revision_writers w ON w.key_id = r.key_id AND w.mod_revision = r.mod_revision \
             LEFT JOIN audit_requests a ON a.id = w.request_id \
             WHERE k.key = $1 AND (CAST($2 AS bigint) IS NULL OR c.id = $2) ORDER BY c.id, r.mod_revision"
        );
        let mut out = Vec::new();
        let cluster = cluster.map_or(Cell::Null, Cell::from);
        self.each(
            "revisions",
            &sql,
            &[Cell::Bytes(key.to_vec()), cluster],
            &mut |row| {
                let mut c = Cursor::new(self, "revisions", row);
                let cluster_row = ClusterId(c.int("cluster_id")?);
                let hex = |b: Option<Vec<u8>>| b.map(|b| crate::hex::hex(&b));
                let mut row = HistoryRow {
                    written_at: None,
                    written_between: [None, None],
                    cluster: labels.get(&cluster_row).cloned().unwrap_or_default(),
                    cluster_id: c.text("clusters.etcd_cluster_id")?,
                    mod_revision: c.revision("mod_revision")?,
                    create_revision: c.revision("create_revision")?,
                    version: c.int("version")?,
                    deleted: c.flag("deleted")?,
                    lease: c.int("lease")?,
                    value_size: c.int("value_size")?,
                    value_sha256: hex(c.opt_bytes("value_sha256")?),
                    value_hash: c.opt_text("value_hash")?,
                    encoding: c.opt_text("encoding")?,
                    encryption: c.opt_text("encryption")?,
                    api_version: c.opt_text("api_version")?,
                    kind: c.opt_text("kind")?,
                    namespace: c.opt_text("namespace")?,
                    name: c.opt_text("name")?,
                    uid: c.opt_text("uid")?,
                    generation: c.opt_int("generation")?,
                    decode_error: c.opt_text("decode_error")?,
                    run_id: c.int("run_id")?,
                    semantic_sha256: hex(c.opt_bytes("semantic_sha256")?),
                    change_class: c.opt_text("change_class")?,
                    change_cause: c.opt_text("change_cause")?,
                    changed_paths: c.json("changed_paths")?,
                    changed_by: c.json("changed_by")?,
                    written_by_apiserver: apiserver_writer(key),
                    written_by: written_by(&mut c)?,
                    deleted_after: c.opt_revision("deleted_after")?,
                    last_seen_run: c.opt_int("runs.id")?,
                    diff: None,
                };
                super::changes::check_encoding(&c, row.encoding.as_deref(), row.encryption.as_deref())?;
                // An attributed revision's time is exact; others the clock bounds.
                let (earliest, latest) = (
                    c.opt_int("clock_envelope.earliest")?,
                    c.opt_int("clock_envelope.latest")?,
                );
                row.written_at = row.written_by.as_ref().map(|w| w.time.clone());
                row.written_between = match &row.written_at {
                    Some(at) => [Some(at.clone()), Some(at.clone())],
                    None => [earliest, latest].map(|us| {
                        let t = jiff::Timestamp::from_microsecond(us?).ok()?;
                        crate::decode::gotime::micro_time(t.as_second(), t.subsec_nanosecond())
                    }),
                };
                out.push(row);
                Ok(())
            },
        )?;
        Ok(out)
    }

    fn add_diffs(&self, rows: &mut [HistoryRow]) -> Result<(), StoreError> {
        add_diffs(rows, |h| self.canonical_value(h), |h| self.redacted_form(h))
    }

    fn canonical_value(&self, semantic_sha256: &[u8]) -> Result<Option<serde_json::Value>, StoreError> {
        let value = first_row(
            self,
            "semantic_values",
            "SELECT s.codec, s.canonical, b.canonical FROM semantic_values s \
             LEFT JOIN semantic_values b ON b.id = s.base WHERE s.hash = $1",
            &[Cell::Bytes(semantic_sha256.to_vec())],
            |c| {
                let Some(json) = c.packed("canonical")?.bytes() else {
                    return Ok(None);
                };
                let json = json.map_err(|source| StoreError::Io {
                    path: self.location().to_path_buf(),
                    source,
                })?;
                serde_json::from_slice(&json)
                    .map(Some)
                    .map_err(|e| c.damage("canonical", e))
            },
        )?;
        Ok(value.flatten())
    }

    fn redacted_form(&self, semantic_sha256: &[u8]) -> Result<Option<serde_json::Value>, StoreError> {
        let blob = first_row(
            self,
            "semantic_values",
            "SELECT redacted FROM semantic_values WHERE hash = $1",
            &[Cell::Bytes(semantic_sha256.to_vec())],
            |c| c.opt_bytes("redacted"),
        )?;
        crate::ingest::blob::Packed::alone(blob.flatten())
            .json()
            .map_err(|source| StoreError::Io {
                path: self.location().to_path_buf(),
                source,
            })
    }
}
