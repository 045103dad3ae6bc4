//! Reading stored revisions back.

use super::Store;
use crate::hex::hex;
use crate::store::audit::{Match, WrittenBy};
use crate::store::reader::ClusterReads;
use crate::store::HistoryRow;
use crate::store::StoreError;
use postgres::Row;

/// The columns [`written_by`] reads, for a query that joins
/// `revision_writers w` and `audit_requests a`.
pub(super) const WRITTEN_BY_COLUMNS: &str = "a.audit_id AS w_audit_id, w.match AS w_match, \
     a.username AS w_user, a.groups AS w_groups, a.impersonated_user AS w_impersonated_user, \
     a.user_agent AS w_user_agent, a.source_ips AS w_source_ips, a.verb AS w_verb, \
     a.subresource AS w_subresource, a.time AS w_time";

/// Who wrote the revision a row holds, from [`WRITTEN_BY_COLUMNS`].
pub(super) fn written_by(store: &Store, r: &Row) -> Result<Option<WrittenBy>, StoreError> {
    let err = |e| store.err(e);
    let Some(audit_id) = r.try_get::<_, Option<String>>("w_audit_id").map_err(err)? else {
        return Ok(None);
    };
    let json = |name: &str, column: &str| -> Result<Vec<String>, StoreError> {
        let text: String = r.try_get(name).map_err(err)?;
        serde_json::from_str(&text).map_err(|e| store.damaged(column, e))
    };
    let match_name: String = r.try_get("w_match").map_err(err)?;
    Ok(Some(WrittenBy {
        user: r.try_get("w_user").map_err(err)?,
        groups: json("w_groups", "audit_requests.groups")?,
        impersonated_user: r.try_get("w_impersonated_user").map_err(err)?,
        user_agent: r.try_get("w_user_agent").map_err(err)?,
        source_ips: json("w_source_ips", "audit_requests.source_ips")?,
        verb: r.try_get("w_verb").map_err(err)?,
        subresource: r.try_get("w_subresource").map_err(err)?,
        audit_id,
        time: r.try_get("w_time").map_err(err)?,
        match_kind: Match::parse(&match_name).map_err(|e| store.damaged("revision_writers.match", e))?,
    }))
}

impl crate::store::reader::HistoryReads for Store {
    fn history(&self, key: &[u8], cluster: Option<i64>) -> Result<Vec<HistoryRow>, StoreError> {
        let labels: std::collections::HashMap<i64, String> = self
            .clusters()?
            .into_iter()
            .map(|c| (c.row, c.label().to_string()))
            .collect();
        // The clock's bounds of each revision (see the SQLite backend's
        // `read_interval`), read with the row rather than two queries a row.
        let rows = self.query(
            &format!(
                "SELECT c.etcd_cluster_id, c.id AS cluster_row, r.mod_revision, r.create_revision, r.version, r.deleted, \
                 r.lease, r.value_size, r.value_sha256, r.value_hash, r.encoding, r.encryption, r.api_version, r.kind, \
                 r.namespace, r.name, r.uid, r.generation, r.decode_error, r.run_id, r.semantic_sha256, r.change_class, \
                 r.change_cause, r.changed_paths, r.changed_by, {WRITTEN_BY_COLUMNS}, r.deleted_after, \
                 (SELECT max(s.id) FROM runs s WHERE s.cluster_id = c.id AND s.status = 'complete' \
                  AND s.head_revision = r.deleted_after) AS last_seen_run, \
                 (SELECT e.earliest FROM clock_envelope e WHERE e.cluster_id = c.id AND e.revision <= r.mod_revision \
                  ORDER BY e.revision DESC LIMIT 1) AS earliest, \
                 (SELECT e.latest FROM clock_envelope e WHERE e.cluster_id = c.id AND e.revision >= r.mod_revision \
                  ORDER BY e.revision LIMIT 1) AS latest \
                 FROM revisions r JOIN keys k ON k.id = r.key_id JOIN clusters c ON c.id = k.cluster_id \
                 LEFT JOIN revision_writers w ON w.key_id = r.key_id AND w.mod_revision = r.mod_revision \
                 LEFT JOIN audit_requests a ON a.id = w.request_id \
                 WHERE k.key = $1 AND ($2::bigint IS NULL OR c.id = $2) ORDER BY c.id, r.mod_revision"
            ),
            &[&key, &cluster],
        )?;
        let err = |e| self.err(e);
        let mut out = Vec::with_capacity(rows.len());
        for r in &rows {
            let written_by = written_by(self, r)?;
            let written_at = written_by.as_ref().map(|w| w.time.clone());
            // An attributed revision's time is exact; others the clock bounds.
            let written_between = match &written_at {
                Some(at) => [Some(at.clone()), Some(at.clone())],
                None => {
                    let at = |column: &str| -> Result<Option<String>, StoreError> {
                        Ok(r.try_get::<_, Option<i64>>(column)
                            .map_err(err)?
                            .and_then(|us| jiff::Timestamp::from_microsecond(us).ok())
                            .and_then(|t| {
                                crate::decode::gotime::micro_time(t.as_second(), t.subsec_nanosecond())
                            }))
                    };
                    [at("earliest")?, at("latest")?]
                }
            };
            let cluster: i64 = r.try_get("cluster_row").map_err(err)?;
            out.push(HistoryRow {
                written_at,
                written_between,
                cluster: labels.get(&cluster).cloned().unwrap_or_default(),
                cluster_id: r.try_get("etcd_cluster_id").map_err(err)?,
                mod_revision: r.try_get("mod_revision").map_err(err)?,
                create_revision: r.try_get("create_revision").map_err(err)?,
                version: r.try_get("version").map_err(err)?,
                deleted: r.try_get("deleted").map_err(err)?,
                lease: r.try_get("lease").map_err(err)?,
                value_size: r.try_get("value_size").map_err(err)?,
                value_sha256: r
                    .try_get::<_, Option<Vec<u8>>>("value_sha256")
                    .map_err(err)?
                    .map(|b| hex(&b)),
                value_hash: r.try_get("value_hash").map_err(err)?,
                encoding: r.try_get("encoding").map_err(err)?,
                encryption: r.try_get("encryption").map_err(err)?,
                api_version: r.try_get("api_version").map_err(err)?,
                kind: r.try_get("kind").map_err(err)?,
                namespace: r.try_get("namespace").map_err(err)?,
                name: r.try_get("name").map_err(err)?,
                uid: r.try_get("uid").map_err(err)?,
                generation: r.try_get("generation").map_err(err)?,
                decode_error: r.try_get("decode_error").map_err(err)?,
                run_id: r.try_get("run_id").map_err(err)?,
                semantic_sha256: r
                    .try_get::<_, Option<Vec<u8>>>("semantic_sha256")
                    .map_err(err)?
                    .map(|b| hex(&b)),
                change_class: r.try_get("change_class").map_err(err)?,
                change_cause: r.try_get("change_cause").map_err(err)?,
                changed_paths: self.json_column(
                    r.try_get("changed_paths").map_err(err)?,
                    "revisions.changed_paths",
                )?,
                changed_by: self
                    .json_column(r.try_get("changed_by").map_err(err)?, "revisions.changed_by")?,
                written_by_apiserver: crate::store::history::apiserver_writer(key),
                written_by,
                deleted_after: r.try_get("deleted_after").map_err(err)?,
                last_seen_run: r.try_get("last_seen_run").map_err(err)?,
                diff: None,
            });
        }
        Ok(out)
    }

    fn add_diffs(&self, rows: &mut [HistoryRow]) -> Result<(), StoreError> {
        crate::store::history::add_diffs(rows, |h| self.canonical_value(h), |h| self.redacted_form(h))
    }

    fn canonical_value(&self, semantic_sha256: &[u8]) -> Result<Option<serde_json::Value>, StoreError> {
        let packed = match self.query_opt(
            "SELECT s.codec, s.canonical, b.canonical FROM semantic_values s \
             LEFT JOIN semantic_values b ON b.id = s.base WHERE s.hash = $1",
            &[&semantic_sha256],
        )? {
            Some(r) => super::changes::InOrder::new(self, &r).packed()?,
            None => Default::default(),
        };
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
        let blob: Option<Vec<u8>> = self
            .query_opt(
                "SELECT redacted FROM semantic_values WHERE hash = $1",
                &[&semantic_sha256],
            )?
            .and_then(|r| r.get(0));
        crate::ingest::blob::Packed::alone(blob)
            .json()
            .map_err(|source| StoreError::Io {
                path: self.path.clone(),
                source,
            })
    }
}
