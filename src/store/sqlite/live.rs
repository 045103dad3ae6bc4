//! The live set of a cluster at a revision: each key's newest stored
//! revision at or before it, unless that is a tombstone.

use super::Store;
use crate::store::LiveObject;
use crate::store::StoreError;

impl Store {
    /// Every live object of `cluster` at `revision`, by key.
    pub(in crate::store) fn read_live_objects(
        &self,
        cluster: i64,
        revision: i64,
    ) -> Result<Vec<LiveObject>, StoreError> {
        let err = |e| self.err(e);
        let paths = self.field_path_names()?;
        let mut stmt = self
            .conn
            .prepare(
                "SELECT k.key, k.resource, coalesce(r.namespace, k.namespace), coalesce(r.name, k.name), r.kind, r.uid, \
                 r.mod_revision, r.semantic_sha256, s.codec, s.fields, b.fields, s.codec, s.managed, b.managed, r.hash_key \
                 FROM keys k JOIN revisions r ON r.key_id = k.id AND r.mod_revision = \
                   (SELECT max(mod_revision) FROM revisions WHERE key_id = k.id AND mod_revision <= ?2) \
                 LEFT JOIN semantic_values s ON s.hash = r.semantic_sha256 \
                 LEFT JOIN semantic_values b ON b.id = s.base \
                 WHERE k.cluster_id = ?1 AND r.deleted = 0 ORDER BY k.key",
            )
            .map_err(err)?;
        let rows = stmt
            .query_map(rusqlite::params![cluster, revision], |r| {
                let key: Vec<u8> = r.get(0)?;
                let fields = super::packed(r, 8)?;
                let managed = super::packed(r, 11)?;
                Ok(LiveObject {
                    key: String::from_utf8_lossy(&key).into_owned(),
                    resource: r.get(1)?,
                    namespace: r.get(2)?,
                    name: r.get(3)?,
                    kind: r.get(4)?,
                    uid: r.get(5)?,
                    mod_revision: r.get(6)?,
                    semantic_sha256: r.get(7)?,
                    fields: super::changes::decode_fields(&fields, &paths, 8)?.unwrap_or_default(),
                    managed: managed.json().map_err(|e| {
                        rusqlite::Error::FromSqlConversionFailure(
                            12,
                            rusqlite::types::Type::Blob,
                            Box::new(e),
                        )
                    })?,
                    hash_key: r.get(14)?,
                })
            })
            .map_err(err)?;
        rows.collect::<Result<_, _>>().map_err(err)
    }

    /// A run's head revision and cluster.
    pub(in crate::store) fn read_run_head(&self, run: i64) -> Result<Option<(i64, i64)>, StoreError> {
        use rusqlite::OptionalExtension;
        self.conn
            .query_row(
                "SELECT cluster_id, head_revision FROM runs WHERE id = ?1",
                [run],
                |r| Ok(r.get::<_, Option<i64>>(0)?.zip(r.get::<_, Option<i64>>(1)?)),
            )
            .optional()
            .map(Option::flatten)
            .map_err(|e| self.err(e))
    }
}
