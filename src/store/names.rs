//! Finding stored objects by name, and what `show` reads of one revision
//! beyond its row: the field hashes of content that is never stored, and
//! whether an owner still exists.

use super::changes::{decode_fields, path_names};
use super::reader::NameReads;
use super::sql::{first_row, one_row, Cursor, Sql};
use super::tables::Cell;
use super::{NamedKey, StoreError};
use crate::canon::path::FieldPath;
use crate::canon::semantic::FIELD_HASH_LEN;
use std::collections::BTreeMap;

/// A text parameter, NULL for none.
fn opt_text(text: Option<&str>) -> Cell {
    text.map_or(Cell::Null, |t| Cell::Text(t.to_string()))
}

impl<T: Sql + ?Sized> NameReads for T {
    fn keys_named(
        &self,
        group: &str,
        resource: &str,
        namespace: Option<&str>,
        name: Option<&str>,
        limit: Option<u32>,
    ) -> Result<Vec<NamedKey>, StoreError> {
        let mut out = Vec::new();
        self.each(
            "keys",
            "SELECT DISTINCT key, namespace, name FROM keys WHERE api_group = $1 AND resource = $2 \
             AND (CAST($3 AS text) IS NULL OR namespace = $3) AND (CAST($4 AS text) IS NULL OR name = $4) \
             ORDER BY key LIMIT $5",
            &[
                Cell::Text(group.to_string()),
                Cell::Text(resource.to_string()),
                opt_text(namespace),
                opt_text(name),
                self.limit(limit),
            ],
            &mut |row| {
                let mut c = Cursor::new(self, "keys", row);
                out.push(NamedKey {
                    key: c.lossy("key")?,
                    namespace: c.opt_text("namespace")?,
                    name: c.opt_text("name")?,
                });
                Ok(())
            },
        )?;
        Ok(out)
    }

    fn semantic_fields(
        &self,
        semantic_sha256: &[u8],
    ) -> Result<BTreeMap<FieldPath, [u8; FIELD_HASH_LEN]>, StoreError> {
        let paths = path_names(self)?;
        let fields = first_row(
            self,
            "semantic_values",
            "SELECT s.codec, s.fields, b.fields FROM semantic_values s \
             LEFT JOIN semantic_values b ON b.id = s.base WHERE s.hash = $1",
            &[Cell::Bytes(semantic_sha256.to_vec())],
            |c| {
                let packed = c.packed("fields")?;
                decode_fields(c, &packed, &paths)
            },
        )?;
        Ok(fields.flatten().unwrap_or_default())
    }

    fn uid_live(&self, uid: &str) -> Result<bool, StoreError> {
        one_row(
            self,
            "revisions",
            "SELECT CASE WHEN EXISTS (SELECT 1 FROM revisions r WHERE r.uid = $1 AND NOT r.deleted \
             AND r.mod_revision = (SELECT max(mod_revision) FROM revisions WHERE key_id = r.key_id)) \
             THEN 1 ELSE 0 END",
            &[Cell::Text(uid.to_string())],
            |c| c.flag("uid"),
        )
    }
}
