//! Stored canonical values read back for detectors and diffs: each once,
//! and the first read that fails kept, so the caller fails instead of
//! showing a damaged value as missing.

use super::Store;
use crate::store::reader::HistoryReads;
use crate::store::Contents;
use crate::store::StoreError;

impl crate::store::reader::ContentReads for Store {
    fn contents_of(&self, cluster: i64, group: &str, resource: &str) -> Result<Vec<Contents>, StoreError> {
        let err = |e| self.err(e);
        let mut stmt = self
            .conn
            .prepare(
                "SELECT r.key_id, r.mod_revision, r.semantic_sha256 FROM revisions r JOIN keys k ON k.id = r.key_id \
                 WHERE k.cluster_id = ?1 AND k.api_group = ?2 AND k.resource = ?3 ORDER BY r.key_id, r.mod_revision",
            )
            .map_err(err)?;
        let rows: Vec<(i64, i64, Option<Vec<u8>>)> = stmt
            .query_map(rusqlite::params![cluster, group, resource], |r| {
                Ok((r.get(0)?, r.get(1)?, r.get(2)?))
            })
            .map_err(err)?
            .collect::<Result<_, _>>()
            .map_err(err)?;
        let mut out: Vec<Contents> = Vec::new();
        let mut last_key = None;
        for (key, revision, hash) in rows {
            let content = match hash {
                Some(h) => self.canonical_value(&h)?,
                None => None,
            };
            if last_key != Some(key) {
                out.push(Vec::new());
                last_key = Some(key);
            }
            out.last_mut().expect("pushed").push((revision, content));
        }
        Ok(out)
    }
}
