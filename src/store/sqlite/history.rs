//! Reading stored revisions back.

use super::Store;
use crate::hex::hex;
use crate::store::reader::ClusterReads;
use crate::store::HistoryRow;
use crate::store::StoreError;

/// A JSON text column as `T`; text that does not parse is an error naming
/// the column, not an empty value.
fn json_column<T: serde::de::DeserializeOwned>(
    r: &rusqlite::Row<'_>,
    name: &str,
) -> rusqlite::Result<Option<T>> {
    match r.get::<_, Option<String>>(name)? {
        None => Ok(None),
        Some(text) => serde_json::from_str(&text).map(Some).map_err(|e| {
            let index = r.as_ref().column_index(name).unwrap_or(0);
            rusqlite::Error::FromSqlConversionFailure(index, rusqlite::types::Type::Text, Box::new(e))
        }),
    }
}

impl crate::store::reader::HistoryReads for Store {
    fn history(&self, key: &[u8], cluster: Option<i64>) -> Result<Vec<HistoryRow>, StoreError> {
        let labels: std::collections::HashMap<i64, String> = self
            .clusters()?
            .into_iter()
            .map(|c| (c.row, c.label().to_string()))
            .collect();
        let mut stmt = self
            .conn
            .prepare(&format!(
                "SELECT c.etcd_cluster_id, c.id AS cluster_row, r.mod_revision, r.create_revision, r.version, r.deleted, r.lease, r.value_size, \
                 r.value_sha256, r.value_hash, r.encoding, r.encryption, r.api_version, r.kind, r.namespace, r.name, r.uid, r.generation, \
                 r.decode_error, r.run_id, r.semantic_sha256, r.change_class, r.change_cause, r.changed_paths, r.changed_by, \
                 r.deleted_after, (SELECT max(s.id) FROM runs s WHERE s.cluster_id = c.id AND s.status = 'complete' \
                   AND s.head_revision = r.deleted_after) AS last_seen_run, {} \
                 FROM revisions r JOIN keys k ON k.id = r.key_id JOIN clusters c ON c.id = k.cluster_id \
                 LEFT JOIN revision_writers w ON w.key_id = r.key_id AND w.mod_revision = r.mod_revision \
                 LEFT JOIN audit_requests a ON a.id = w.request_id \
                 WHERE k.key = ?1 AND (?2 IS NULL OR c.id = ?2) ORDER BY c.id, r.mod_revision",
                super::audit::WRITTEN_BY_COLUMNS
            ))
            .map_err(|e| self.err(e))?;
        let rows = stmt
            .query_map(rusqlite::params![key, cluster], |r| {
                let written_by = super::audit::written_by(r)?;
                let written_at = written_by.as_ref().map(|w| w.time.clone());
                Ok((
                    r.get::<_, i64>("cluster_row")?,
                    HistoryRow {
                        written_at,
                        written_between: [None, None],
                        cluster: String::new(),
                        cluster_id: r.get("etcd_cluster_id")?,
                        mod_revision: r.get("mod_revision")?,
                        create_revision: r.get("create_revision")?,
                        version: r.get("version")?,
                        deleted: r.get("deleted")?,
                        lease: r.get("lease")?,
                        value_size: r.get("value_size")?,
                        value_sha256: r.get::<_, Option<Vec<u8>>>("value_sha256")?.map(|b| hex(&b)),
                        value_hash: r.get("value_hash")?,
                        encoding: r.get("encoding")?,
                        encryption: r.get("encryption")?,
                        api_version: r.get("api_version")?,
                        kind: r.get("kind")?,
                        namespace: r.get("namespace")?,
                        name: r.get("name")?,
                        uid: r.get("uid")?,
                        generation: r.get("generation")?,
                        decode_error: r.get("decode_error")?,
                        run_id: r.get("run_id")?,
                        semantic_sha256: r.get::<_, Option<Vec<u8>>>("semantic_sha256")?.map(|b| hex(&b)),
                        change_class: r.get("change_class")?,
                        change_cause: r.get("change_cause")?,
                        changed_paths: json_column(r, "changed_paths")?.unwrap_or_default(),
                        changed_by: json_column(r, "changed_by")?.unwrap_or_default(),
                        written_by_apiserver: crate::store::history::apiserver_writer(key),
                        written_by,
                        deleted_after: r.get("deleted_after")?,
                        last_seen_run: r.get("last_seen_run")?,
                        diff: None,
                    },
                ))
            })
            .map_err(|e| self.err(e))?;
        let mut out = Vec::new();
        for row in rows {
            let (cluster, mut row) = row.map_err(|e| self.err(e))?;
            row.cluster = labels.get(&cluster).cloned().unwrap_or_default();
            // An attributed revision's time is exact; others the clock bounds.
            row.written_between = match &row.written_at {
                Some(at) => [Some(at.clone()), Some(at.clone())],
                None => {
                    let interval = self.read_interval(cluster, row.mod_revision)?;
                    let at = |t: Option<jiff::Timestamp>| {
                        t.and_then(|t| {
                            crate::decode::gotime::micro_time(t.as_second(), t.subsec_nanosecond())
                        })
                    };
                    [at(interval.earliest), at(interval.latest)]
                }
            };
            out.push(row);
        }
        Ok(out)
    }

    fn add_diffs(&self, rows: &mut [HistoryRow]) -> Result<(), StoreError> {
        crate::store::history::add_diffs(rows, |h| self.canonical_value(h), |h| self.redacted_form(h))
    }

    fn canonical_value(&self, semantic_sha256: &[u8]) -> Result<Option<serde_json::Value>, StoreError> {
        use rusqlite::OptionalExtension;
        let packed = self
            .conn
            .query_row(
                "SELECT s.codec, s.canonical, b.canonical FROM semantic_values s \
                 LEFT JOIN semantic_values b ON b.id = s.base WHERE s.hash = ?1",
                [semantic_sha256],
                |r| super::packed(r, 0),
            )
            .optional()
            .map_err(|e| self.err(e))?
            .unwrap_or_default();
        let Some(json) = packed.bytes() else {
            return Ok(None);
        };
        let json = json.map_err(|source| StoreError::Io {
            path: self.path.clone(),
            source,
        })?;
        serde_json::from_slice(&json)
            .map(Some)
            .map_err(|e| self.damaged("semantic_values.canonical", e))
    }

    fn redacted_form(&self, semantic_sha256: &[u8]) -> Result<Option<serde_json::Value>, StoreError> {
        use rusqlite::OptionalExtension;
        let blob: Option<Vec<u8>> = self
            .conn
            .query_row(
                "SELECT redacted FROM semantic_values WHERE hash = ?1",
                [semantic_sha256],
                |r| r.get(0),
            )
            .optional()
            .map_err(|e| self.err(e))?
            .flatten();
        crate::ingest::blob::Packed::alone(blob)
            .json()
            .map_err(|source| StoreError::Io {
                path: self.path.clone(),
                source,
            })
    }
}
