//! Finding stored objects by name, and what `show` reads of one revision
//! beyond its row: the field hashes of content that is never stored, and
//! whether an owner still exists.

use super::changes::InOrder;
use super::Store;
use crate::canon::path::FieldPath;
use crate::canon::semantic::FIELD_HASH_LEN;
use crate::store::{NamedKey, StoreError};
use std::collections::BTreeMap;

impl crate::store::reader::NameReads for Store {
    fn keys_named(
        &self,
        group: &str,
        resource: &str,
        namespace: Option<&str>,
        name: Option<&str>,
        limit: Option<u32>,
    ) -> Result<Vec<NamedKey>, StoreError> {
        let limit = limit.map(i64::from);
        self.query(
            "SELECT DISTINCT key, namespace, name FROM keys WHERE api_group = $1 AND resource = $2 \
             AND ($3::text IS NULL OR namespace = $3) AND ($4::text IS NULL OR name = $4) ORDER BY key LIMIT $5",
            &[&group, &resource, &namespace, &name, &limit],
        )?
        .iter()
        .map(|r| {
            let mut c = InOrder::new(self, r);
            Ok(NamedKey {
                key: String::from_utf8_lossy(&c.next::<Vec<u8>>()?).into_owned(),
                namespace: c.next()?,
                name: c.next()?,
            })
        })
        .collect()
    }

    fn semantic_fields(
        &self,
        semantic_sha256: &[u8],
    ) -> Result<BTreeMap<FieldPath, [u8; FIELD_HASH_LEN]>, StoreError> {
        let paths = self.field_path_names()?;
        let Some(r) = self.query_opt(
            "SELECT s.codec, s.fields, b.fields FROM semantic_values s \
             LEFT JOIN semantic_values b ON b.id = s.base WHERE s.hash = $1",
            &[&semantic_sha256],
        )?
        else {
            return Ok(BTreeMap::new());
        };
        let fields = InOrder::new(self, &r).packed()?;
        Ok(self.decode_fields(&fields, &paths)?.unwrap_or_default())
    }

    fn uid_live(&self, uid: &str) -> Result<bool, StoreError> {
        self.query_opt(
            "SELECT EXISTS (SELECT 1 FROM revisions r WHERE r.uid = $1 AND NOT r.deleted \
             AND r.mod_revision = (SELECT max(mod_revision) FROM revisions WHERE key_id = r.key_id))",
            &[&uid],
        )?
        .expect("EXISTS gives a row")
        .try_get(0)
        .map_err(|e| self.err(e))
    }
}
