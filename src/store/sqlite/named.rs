//! Finding stored objects by name, and what `show` reads of one revision
//! beyond its row: the field hashes of content that is never stored, and
//! whether an owner still exists.

use super::Store;
use crate::canon::path::FieldPath;
use crate::canon::semantic::FIELD_HASH_LEN;
use crate::store::{NamedKey, StoreError};
use rusqlite::{params, OptionalExtension};
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
        let err = |e| self.err(e);
        let mut stmt = self
            .conn
            .prepare(
                "SELECT DISTINCT key, namespace, name FROM keys WHERE api_group = ?1 AND resource = ?2 \
                 AND (?3 IS NULL OR namespace = ?3) AND (?4 IS NULL OR name = ?4) ORDER BY key LIMIT ?5",
            )
            .map_err(err)?;
        let rows = stmt
            .query_map(
                params![group, resource, namespace, name, limit.map_or(-1, i64::from)],
                |r| {
                    Ok(NamedKey {
                        key: String::from_utf8_lossy(&r.get::<_, Vec<u8>>(0)?).into_owned(),
                        namespace: r.get(1)?,
                        name: r.get(2)?,
                    })
                },
            )
            .map_err(err)?;
        rows.collect::<Result<_, _>>().map_err(err)
    }

    fn semantic_fields(
        &self,
        semantic_sha256: &[u8],
    ) -> Result<BTreeMap<FieldPath, [u8; FIELD_HASH_LEN]>, StoreError> {
        let paths = self.field_path_names()?;
        let fields = self
            .conn
            .query_row(
                "SELECT s.codec, s.fields, b.fields FROM semantic_values s \
                 LEFT JOIN semantic_values b ON b.id = s.base WHERE s.hash = ?1",
                [semantic_sha256],
                |r| super::changes::decode_fields(&super::packed(r, 0)?, &paths, 1),
            )
            .optional()
            .map_err(|e| self.err(e))?;
        Ok(fields.flatten().unwrap_or_default())
    }

    fn uid_live(&self, uid: &str) -> Result<bool, StoreError> {
        self.conn
            .query_row(
                "SELECT EXISTS (SELECT 1 FROM revisions r WHERE r.uid = ?1 AND r.deleted = 0 \
                 AND r.mod_revision = (SELECT max(mod_revision) FROM revisions WHERE key_id = r.key_id))",
                [uid],
                |r| r.get(0),
            )
            .map_err(|e| self.err(e))
    }
}
