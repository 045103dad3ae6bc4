//! The live set of a cluster at a revision: each key's newest stored
//! revision at or before it, unless that is a tombstone.

use super::changes::InOrder;
use super::history::{written_by, WRITTEN_BY_COLUMNS};
use super::{Store, PAGE};
use crate::store::field_blob::PathNames;
use crate::store::paged::{PageSource, Paged};
use crate::store::StoreError;
use crate::store::{LiveIter, LiveObject};
use std::collections::VecDeque;

/// The live objects of a cluster at a revision, a page of keys at a time.
struct LivePages<'s> {
    store: &'s Store,
    cluster: i64,
    revision: i64,
    paths: PathNames,
    /// The key the next page starts after (`None`: from the first).
    after: Option<Vec<u8>>,
    done: bool,
}

impl PageSource for LivePages<'_> {
    type Row = LiveObject;

    /// Reads the next page of keys, each with its newest revision at or
    /// before the revision (none when it has none); none when no key is
    /// left.
    fn fill(&mut self, page: &mut VecDeque<LiveObject>) -> Result<(), StoreError> {
        let store = self.store;
        while page.is_empty() && !self.done {
            let rows = store.query(
                &format!(
                    "SELECT k.key, k.resource, coalesce(r.namespace, k.namespace), coalesce(r.name, k.name), r.kind, \
                     r.uid, r.mod_revision, r.semantic_sha256, s.codec, s.fields, b.fields, s.codec, s.managed, \
                     b.managed, r.hash_key, r.deleted, {WRITTEN_BY_COLUMNS} \
                     FROM (SELECT id, key, resource, namespace, name FROM keys \
                           WHERE cluster_id = $1 AND ($2::bytea IS NULL OR key > $2) ORDER BY key LIMIT $3) k \
                     LEFT JOIN LATERAL (SELECT * FROM revisions WHERE key_id = k.id AND mod_revision <= $4 \
                                        ORDER BY mod_revision DESC LIMIT 1) r ON true \
                     LEFT JOIN semantic_values s ON s.hash = r.semantic_sha256 \
                     LEFT JOIN semantic_values b ON b.id = s.base \
                     LEFT JOIN revision_writers w ON w.key_id = r.key_id AND w.mod_revision = r.mod_revision \
                     LEFT JOIN audit_requests a ON a.id = w.request_id \
                     ORDER BY k.key"
                ),
                &[&self.cluster, &self.after, &PAGE, &self.revision],
            )?;
            self.done = (rows.len() as i64) < PAGE;
            for r in &rows {
                let mut c = InOrder::new(store, r);
                let key: Vec<u8> = c.next()?;
                let resource = c.next()?;
                let (namespace, name, kind, uid) = (c.next()?, c.next()?, c.next()?, c.next()?);
                let mod_revision: Option<i64> = c.next()?;
                let semantic_sha256 = c.next()?;
                let (fields, managed) = (c.packed()?, c.packed()?);
                let hash_key = c.next()?;
                let deleted: Option<bool> = c.next()?;
                self.after = Some(key.clone());
                // No revision at or before the revision, or a tombstone.
                let (Some(mod_revision), Some(false)) = (mod_revision, deleted) else {
                    continue;
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
                    fields: store.decode_fields(&fields, &self.paths)?.unwrap_or_default(),
                    managed: managed
                        .json()
                        .map_err(|e| store.damaged("semantic_values.managed", e))?,
                    hash_key,
                    written_by: written_by(store, r)?,
                });
            }
        }
        Ok(())
    }
}

impl crate::store::reader::LiveReads for Store {
    fn run_head(&self, run: i64) -> Result<Option<(i64, i64)>, StoreError> {
        let Some(r) = self.query_opt(
            "SELECT cluster_id, head_revision FROM runs WHERE id = $1",
            &[&run],
        )?
        else {
            return Ok(None);
        };
        let mut c = InOrder::new(self, &r);
        Ok(c.next::<Option<i64>>()?.zip(c.next::<Option<i64>>()?))
    }

    fn live_objects(&self, cluster: i64, revision: i64) -> LiveIter<'_> {
        let paths = match self.field_path_names() {
            Ok(paths) => paths,
            Err(e) => return Box::new(std::iter::once(Err(e))),
        };
        Box::new(Paged::new(LivePages {
            store: self,
            cluster,
            revision,
            paths,
            after: None,
            done: false,
        }))
    }
}
