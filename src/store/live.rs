//! The live set of a cluster at a revision: each key's newest stored
//! revision at or before it, unless that is a tombstone.

use super::audit::{written_by, WRITTEN_BY_COLUMNS};
use super::changes::{decode_fields, path_names};
use super::field_blob::PathNames;
use super::paged::{PageSource, Paged};
use super::reader::LiveReads;
use super::sql::{first_row, Cursor, Sql};
use super::tables::Cell;
use super::{RunId, StoreError};
use crate::source::Revision;
use crate::store::ClusterId;
use std::collections::{BTreeMap, VecDeque};

/// One live object at a revision.
#[derive(Clone, Debug, Default)]
pub struct LiveObject {
    pub key: String,
    pub resource: Option<String>,
    pub namespace: Option<String>,
    pub name: Option<String>,
    pub kind: Option<String>,
    pub uid: Option<String>,
    pub mod_revision: Revision,
    pub semantic_sha256: Option<Vec<u8>>,
    /// Field path → value hash.
    pub fields: BTreeMap<crate::canon::path::FieldPath, [u8; crate::canon::semantic::FIELD_HASH_LEN]>,
    /// The object's managedFields, when stored.
    pub managed: Option<serde_json::Value>,
    /// The id of the key its keyed hashes are under, if it has any.
    pub hash_key: Option<String>,
    /// The audited request that wrote this revision, when one is known.
    pub written_by: Option<crate::store::audit::WrittenBy>,
}

/// Live objects as they are read, in key order.
pub type LiveIter<'s> = Box<dyn Iterator<Item = Result<LiveObject, crate::store::StoreError>> + 's>;

/// Keys read per page.
const PAGE: i64 = 256;

/// The live objects of a cluster at a revision, a page of keys at a time.
struct LivePages<'s, T: ?Sized> {
    db: &'s T,
    cluster: ClusterId,
    revision: Revision,
    paths: PathNames,
    /// The key the next page starts after (empty: from the first).
    after: Vec<u8>,
    done: bool,
}

impl<T: Sql + ?Sized> PageSource for LivePages<'_, T> {
    type Row = LiveObject;

    /// Reads the next page of keys, each with its newest revision at or
    /// before the revision (none when it has none); none when no key is
    /// left.
    fn fill(&mut self, page: &mut VecDeque<LiveObject>) -> Result<(), StoreError> {
        let db = self.db;
        let sql = format!(
            "SELECT k.key, k.resource, coalesce(r.namespace, k.namespace), coalesce(r.name, k.name), r.kind, \
             r.uid, r.mod_revision, r.semantic_sha256, s.codec, s.fields, b.fields, s.codec, s.managed, \
             b.managed, r.hash_key, r.deleted, {WRITTEN_BY_COLUMNS} \
             FROM (SELECT id, key, resource, namespace, name, \
                     (SELECT max(v.mod_revision) FROM revisions v WHERE v.key_id = keys.id AND v.mod_revision <= $4) \
                     AS newest \
                   FROM keys WHERE cluster_id = $1 AND key > $2 ORDER BY key LIMIT $3) k \
             LEFT JOIN revisions r ON r.key_id = k.id AND r.mod_revision = k.newest \
             LEFT JOIN semantic_values s ON s.hash = r.semantic_sha256 \
             LEFT JOIN semantic_values b ON b.id = s.base \
             LEFT JOIN revision_writers w ON w.key_id = r.key_id AND w.mod_revision = r.mod_revision \
             LEFT JOIN audit_requests a ON a.id = w.request_id \
             ORDER BY k.key"
        );
        while page.is_empty() && !self.done {
            let params = [
                Cell::from(self.cluster),
                Cell::Bytes(std::mem::take(&mut self.after)),
                Cell::Int(PAGE),
                self.revision.into(),
            ];
            let mut keys = 0;
            db.each("revisions", &sql, &params, &mut |row| {
                keys += 1;
                let mut c = Cursor::new(db, "revisions", row);
                let key = c.bytes("keys.key")?;
                let (resource, namespace) = (c.opt_text("keys.resource")?, c.opt_text("namespace")?);
                let (name, kind, uid) = (c.opt_text("name")?, c.opt_text("kind")?, c.opt_text("uid")?);
                let mod_revision = c.opt_revision("mod_revision")?;
                let semantic_sha256 = c.opt_bytes("semantic_sha256")?;
                let fields = c.packed("semantic_values.fields")?;
                let managed = c.packed("semantic_values.managed")?;
                let hash_key = c.opt_text("hash_key")?;
                let deleted = c.opt_flag("deleted")?;
                self.after.clone_from(&key);
                // No revision at or before the revision, or a tombstone.
                let (Some(mod_revision), Some(false)) = (mod_revision, deleted) else {
                    return Ok(());
                };
                page.push_back(LiveObject {
                    key: String::from_utf8_lossy(&key).into_owned(),
                    resource,
                    namespace,
                    name,
                    kind,
                    uid,
                    mod_revision,
                    semantic_sha256,
                    fields: decode_fields(&c, &fields, &self.paths)?.unwrap_or_default(),
                    managed: managed
                        .json()
                        .map_err(|e| c.damage("semantic_values.managed", e))?,
                    hash_key,
                    written_by: written_by(&mut c)?,
                });
                Ok(())
            })?;
            self.done = keys < PAGE;
        }
        Ok(())
    }
}

impl<T: Sql + ?Sized> LiveReads for T {
    fn run_head(&self, run: RunId) -> Result<Option<(ClusterId, Revision)>, StoreError> {
        let head = first_row(
            self,
            "runs",
            "SELECT cluster_id, head_revision FROM runs WHERE id = $1",
            &[Cell::Int(run.0)],
            |c| {
                Ok(c.opt_int("cluster_id")?
                    .map(ClusterId)
                    .zip(c.opt_revision("head_revision")?))
            },
        )?;
        Ok(head.flatten())
    }

    fn live_objects(&self, cluster: ClusterId, revision: Revision) -> LiveIter<'_> {
        let paths = match path_names(self) {
            Ok(paths) => paths,
            Err(e) => return Box::new(std::iter::once(Err(e))),
        };
        Box::new(Paged::new(LivePages {
            db: self,
            cluster,
            revision,
            paths,
            after: Vec::new(),
            done: false,
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::source::Sink;
    use crate::store::sqlite::{test_record, test_run, Store};

    /// More keys than a page, some deleted before the revision asked for,
    /// some created after it: the live set comes whole, in key order, each
    /// object at its newest revision then.
    #[test]
    fn the_live_set_spans_pages_in_key_order() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open_for_writing(&dir.path().join("db.sqlite")).unwrap();
        let (cluster, run, fields) = test_run(&store);
        let mut w = crate::lifecycle::RevisionWriter::unfiltered(&store, cluster, run, fields).unwrap();
        let keys = 3 * PAGE + 7;
        let key = |i: i64| format!("/registry/configmaps/ns/cm-{i:04}");
        let object = |i: i64, v: i64| {
            serde_json::json!({"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": format!("cm-{i:04}"), "namespace": "ns", "uid": format!("u{i}")},
                "data": {"v": v.to_string()}})
        };
        let mut revision = 1;
        for i in 0..keys {
            revision += 1;
            w.record(test_record(&key(i), revision, revision, &object(i, 1)))
                .unwrap();
        }
        let middle = revision;
        for i in 0..keys {
            revision += 1;
            let mut r = test_record(&key(i), revision, 2 + i, &object(i, 2));
            if i % 3 == 0 {
                r.deleted = true;
                r.value.clear();
            }
            w.record(r).unwrap();
        }
        w.flush().unwrap();
        drop(w);
        let live = |at: i64| -> Vec<(String, Revision)> {
            store
                .live_objects(cluster, Revision(at))
                .map(|o| o.map(|o| (o.key, o.mod_revision)))
                .collect::<Result<_, _>>()
                .unwrap()
        };
        let at_middle = live(middle);
        assert_eq!(at_middle.len() as i64, keys);
        assert!(at_middle
            .iter()
            .enumerate()
            .all(|(i, (k, r))| *k == key(i as i64) && *r == Revision(2 + i as i64)));
        let at_end = live(revision);
        let expected: Vec<(String, Revision)> = (0..keys)
            .filter(|i| i % 3 != 0)
            .map(|i| (key(i), Revision(middle + 1 + i)))
            .collect();
        assert_eq!(at_end, expected);
        assert!(live(1).is_empty());
    }
}
