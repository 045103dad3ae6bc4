//! Reading stored revisions back.

use super::{Store, StoreError};
use serde::Serialize;

/// One stored revision of a key, as `history` shows it.
#[derive(Clone, Debug, Serialize)]
pub struct HistoryRow {
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
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

impl Store {
    /// Every stored revision of `key`, per cluster, oldest first.
    pub fn history(&self, key: &[u8]) -> Result<Vec<HistoryRow>, StoreError> {
        let mut stmt = self
            .conn
            .prepare(
                "SELECT c.etcd_cluster_id, r.mod_revision, r.create_revision, r.version, r.deleted, r.lease, r.value_size, \
                 r.value_sha256, r.value_hash, r.encoding, r.encryption, r.api_version, r.kind, r.namespace, r.name, r.uid, r.generation, \
                 r.decode_error, r.run_id \
                 FROM revisions r JOIN keys k ON k.id = r.key_id JOIN clusters c ON c.id = k.cluster_id \
                 WHERE k.key = ?1 ORDER BY c.id, r.mod_revision",
            )
            .map_err(|e| self.err(e))?;
        let rows = stmt
            .query_map([key], |r| {
                Ok(HistoryRow {
                    cluster_id: r.get(0)?,
                    mod_revision: r.get(1)?,
                    create_revision: r.get(2)?,
                    version: r.get(3)?,
                    deleted: r.get(4)?,
                    lease: r.get(5)?,
                    value_size: r.get(6)?,
                    value_sha256: r.get::<_, Option<Vec<u8>>>(7)?.map(|b| hex(&b)),
                    value_hash: r.get(8)?,
                    encoding: r.get(9)?,
                    encryption: r.get(10)?,
                    api_version: r.get(11)?,
                    kind: r.get(12)?,
                    namespace: r.get(13)?,
                    name: r.get(14)?,
                    uid: r.get(15)?,
                    generation: r.get(16)?,
                    decode_error: r.get(17)?,
                    run_id: r.get(18)?,
                })
            })
            .map_err(|e| self.err(e))?;
        rows.collect::<Result<_, _>>().map_err(|e| self.err(e))
    }
}
