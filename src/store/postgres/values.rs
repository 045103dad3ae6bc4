//! Stored canonical values read back for detectors and diffs.

use super::Store;
use crate::store::reader::HistoryReads;
use crate::store::Contents;
use crate::store::StoreError;

impl crate::store::reader::ContentReads for Store {
    fn contents_of(&self, cluster: i64, group: &str, resource: &str) -> Result<Vec<Contents>, StoreError> {
        let mut out: Vec<Contents> = Vec::new();
        let mut last_key = None;
        self.each_page(
            "SELECT r.key_id, r.mod_revision, r.semantic_sha256 FROM revisions r JOIN keys k ON k.id = r.key_id \
             WHERE k.cluster_id = $1 AND k.api_group = $2 AND k.resource = $3 ORDER BY r.key_id, r.mod_revision",
            &[&cluster, &group, &resource],
            &mut |rows| {
                for r in rows {
                    let mut c = super::changes::InOrder::new(self, r);
                    let (key, revision, hash): (i64, i64, Option<Vec<u8>>) = (c.next()?, c.next()?, c.next()?);
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
                Ok(())
            },
        )?;
        Ok(out)
    }
}
