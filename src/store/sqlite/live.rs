//! The live set of a cluster at a revision: each key's newest stored
//! revision at or before it, unless that is a tombstone.

use super::Store;
use crate::store::paged::{PageSource, Paged};
use crate::store::StoreError;
use crate::store::{LiveIter, LiveObject};
use std::collections::VecDeque;

/// Live objects read per query.
const PAGE: i64 = 256;

/// The live objects of a cluster at a revision, a page of keys at a time.
struct LivePages<'s> {
    store: &'s Store,
    cluster: i64,
    revision: i64,
    paths: crate::store::field_blob::PathNames,
    /// The key the next page starts after (`None`: from the first).
    after: Option<Vec<u8>>,
    done: bool,
}

impl PageSource for LivePages<'_> {
    type Row = LiveObject;

    /// Reads the next page of keys and each one's newest revision at or
    /// before the revision; none when no key is left.
    fn fill(&mut self, page: &mut VecDeque<LiveObject>) -> Result<(), StoreError> {
        let store = self.store;
        let err = |e| store.err(e);
        while page.is_empty() && !self.done {
            type KeyRow = (i64, Vec<u8>, Option<String>, Option<String>, Option<String>);
            let keys: Vec<KeyRow> = store
                .conn
                .prepare_cached(
                    "SELECT id, key, resource, namespace, name FROM keys \
                     WHERE cluster_id = ?1 AND (?2 IS NULL OR key > ?2) ORDER BY key LIMIT ?3",
                )
                .and_then(|mut s| {
                    s.query_map(rusqlite::params![self.cluster, self.after, PAGE], |r| {
                        Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?))
                    })?
                    .collect()
                })
                .map_err(err)?;
            self.done = (keys.len() as i64) < PAGE;
            self.after = keys.last().map(|k| k.1.clone());
            let mut newest = store
                .conn
                .prepare_cached(
                    &format!(
                        "SELECT coalesce(r.namespace, ?3), coalesce(r.name, ?4), r.kind, r.uid, r.mod_revision, \
                         r.semantic_sha256, s.codec, s.fields, b.fields, s.codec, s.managed, b.managed, r.hash_key, r.deleted, {} \
                         FROM revisions r LEFT JOIN semantic_values s ON s.hash = r.semantic_sha256 \
                         LEFT JOIN semantic_values b ON b.id = s.base \
                         LEFT JOIN revision_writers w ON w.key_id = r.key_id AND w.mod_revision = r.mod_revision \
                         LEFT JOIN audit_requests a ON a.id = w.request_id \
                         WHERE r.key_id = ?1 AND r.mod_revision <= ?2 ORDER BY r.mod_revision DESC LIMIT 1",
                        super::audit::WRITTEN_BY_COLUMNS
                    ),
                )
                .map_err(err)?;
            for (id, key, resource, namespace, name) in keys {
                let mut rows = newest
                    .query(rusqlite::params![id, self.revision, namespace, name])
                    .map_err(err)?;
                let Some(r) = rows.next().map_err(err)? else {
                    continue;
                };
                if r.get::<_, bool>(13).map_err(err)? {
                    continue;
                }
                let fields = super::packed(r, 6).map_err(err)?;
                let managed = super::packed(r, 9).map_err(err)?;
                page.push_back(LiveObject {
                    key: String::from_utf8_lossy(&key).into_owned(),
                    resource,
                    namespace: r.get(0).map_err(err)?,
                    name: r.get(1).map_err(err)?,
                    kind: r.get(2).map_err(err)?,
                    uid: r.get(3).map_err(err)?,
                    mod_revision: r.get(4).map_err(err)?,
                    semantic_sha256: r.get(5).map_err(err)?,
                    fields: super::changes::decode_fields(&fields, &self.paths, 7)
                        .map_err(err)?
                        .unwrap_or_default(),
                    managed: managed
                        .json()
                        .map_err(|e| store.damaged("semantic_values.managed", e))?,
                    hash_key: r.get(12).map_err(err)?,
                    written_by: super::audit::written_by(r).map_err(err)?,
                });
            }
        }
        Ok(())
    }
}

impl crate::store::reader::LiveReads for Store {
    fn run_head(&self, run: i64) -> Result<Option<(i64, i64)>, StoreError> {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::source::Sink;
    use crate::store::reader::LiveReads;

    /// More keys than a page, some deleted before the revision asked for,
    /// some created after it: the live set comes whole, in key order, each
    /// object at its newest revision then.
    #[test]
    fn the_live_set_spans_pages_in_key_order() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open_for_writing(&dir.path().join("db.sqlite")).unwrap();
        let (cluster, run, fields) = super::super::test_run(&store);
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
            w.record(super::super::test_record(
                &key(i),
                revision,
                revision,
                &object(i, 1),
            ))
            .unwrap();
        }
        let middle = revision;
        for i in 0..keys {
            revision += 1;
            let mut r = super::super::test_record(&key(i), revision, 2 + i, &object(i, 2));
            if i % 3 == 0 {
                r.deleted = true;
                r.value.clear();
            }
            w.record(r).unwrap();
        }
        w.flush().unwrap();
        drop(w);
        let live = |at: i64| -> Vec<(String, i64)> {
            store
                .live_objects(cluster, at)
                .map(|o| o.map(|o| (o.key, o.mod_revision)))
                .collect::<Result<_, _>>()
                .unwrap()
        };
        let at_middle = live(middle);
        assert_eq!(at_middle.len() as i64, keys);
        assert!(at_middle
            .iter()
            .enumerate()
            .all(|(i, (k, r))| *k == key(i as i64) && *r == 2 + i as i64));
        let at_end = live(revision);
        let expected: Vec<(String, i64)> = (0..keys)
            .filter(|i| i % 3 != 0)
            .map(|i| (key(i), middle + 1 + i))
            .collect();
        assert_eq!(at_end, expected);
        assert!(live(1).is_empty());
    }
}
