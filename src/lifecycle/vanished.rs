//! Deletes compaction hid from a run: keys earlier runs stored live that
//! the run's source no longer holds (or holds in a newer generation) whose
//! tombstones fell in revisions compaction removed unread. Each gets a
//! tombstone at the latest revision its delete can have had, marked with
//! the revision the delete came after (see [`crate::store::vanished`]).

use crate::source::filter::ResourceFilter;
use crate::source::Revision;
use crate::store::vanished::{InferredDelete, RunHead, StoredKey, StoredRevision};
use crate::store::ClusterId;
use crate::store::{Backend, RunId};
use anyhow::Result;

/// Keys in order, to ask whether the source holds one.
pub(super) struct KeySet<'a>(Vec<&'a [u8]>);

impl<'a> KeySet<'a> {
    pub(super) fn new(keys: impl Iterator<Item = &'a [u8]>) -> Self {
        let mut keys: Vec<&[u8]> = keys.collect();
        keys.sort_unstable();
        KeySet(keys)
    }

    pub(super) fn holds(&self, key: &[u8]) -> bool {
        self.0.binary_search(&key).is_ok()
    }
}

/// Stored keys read per query, and tombstones stored per transaction.
const PAGE: usize = 1000;

/// A stored key whose history says it was live where the run's history is
/// unbroken, yet the source holds it no longer and no delete is stored:
/// the stored history is not what etcd retains.
#[derive(Debug, thiserror::Error)]
#[error(
    "history incomplete: {key} is stored live at revision {stored}, within the history stored unbroken from \
     revision {covered_from}, but the source no longer holds it at revision {head} and no delete of it is stored"
)]
pub struct Unplaced {
    pub key: String,
    pub stored: Revision,
    pub covered_from: Revision,
    pub head: Revision,
}

/// What a run compares: where its history is unbroken from, its head, the
/// keys it recorded, and which keys its source holds live at the head.
pub(super) struct Vanished<'a> {
    pub run: RunId,
    pub cluster: ClusterId,
    pub head: Revision,
    pub covered_from: Revision,
    pub prefix: &'a str,
    pub filter: &'a ResourceFilter,
    pub present: &'a KeySet<'a>,
}

impl Vanished<'_> {
    /// Stores a tombstone for every delete compaction hid from this run;
    /// how many.
    pub(super) fn infer(&self, store: &dyn Backend) -> Result<usize> {
        let heads = store.run_heads(self.cluster, self.run)?;
        let prefix = self.prefix.as_bytes();
        let (mut after, mut inferred, mut batch) = (None::<Vec<u8>>, 0, Vec::new());
        loop {
            let page = store.stored_keys(self.cluster, prefix, self.head, after.as_deref(), PAGE)?;
            for key in &page {
                if !self.filter.records_key(&key.key, self.prefix) {
                    continue;
                }
                if let Some((ended, bound)) =
                    ended(key, self.present.holds(&key.key), self.covered_from, self.head)?
                {
                    batch.push(InferredDelete {
                        key_id: key.key_id,
                        create_revision: ended.create_revision,
                        mod_revision: bound,
                        after: last_seen(&heads, &key.key, ended.mod_revision, bound),
                    });
                }
            }
            if batch.len() >= PAGE || (page.len() < PAGE && !batch.is_empty()) {
                store.store_inferred_deletes(self.cluster, self.run, &batch)?;
                inferred += batch.len();
                batch.clear();
            }
            match page.last() {
                Some(last) if page.len() == PAGE => after = Some(last.key.clone()),
                _ => return Ok(inferred),
            }
        }
    }
}

/// The stored generation of `key` whose delete compaction hid, and the
/// latest revision that delete can have had, if there is one: `present`
/// says whether the source holds the key live at `head`, the history being
/// unbroken from `covered_from`.
fn ended(
    key: &StoredKey,
    present: bool,
    covered_from: Revision,
    head: Revision,
) -> Result<Option<(StoredRevision, Revision)>, Unplaced> {
    let unplaced = |stored: Revision| Unplaced {
        key: String::from_utf8_lossy(&key.key).into_owned(),
        stored,
        covered_from,
        head,
    };
    let newest = key.newest;
    if newest.deleted || covered_from > head.next() {
        return Ok(None);
    }
    if !present {
        // Gone: deleted after its last stored revision and before the
        // unbroken history began (which would hold the delete).
        return match newest.mod_revision < covered_from {
            true => Ok(Some((newest, covered_from.prev()))),
            false => Err(unplaced(newest.mod_revision)),
        };
    }
    // Live in a generation whose start was not preceded by a stored
    // delete of the generation before.
    match key.before {
        Some(before) if !before.deleted && before.create_revision != newest.create_revision => {
            if before.mod_revision >= covered_from {
                return Err(unplaced(before.mod_revision));
            }
            let bound = newest.create_revision.min(covered_from).prev();
            Ok((bound > before.mod_revision).then_some((before, bound)))
        }
        _ => Ok(None),
    }
}

/// The revision a delete came after: the newest head, at most `bound`, of
/// an earlier run that read `key` (which was then live at `stored`), or
/// `stored` when none.
fn last_seen(heads: &[RunHead], key: &[u8], stored: Revision, bound: Revision) -> Revision {
    heads
        .iter()
        .rev()
        .skip_while(|h| h.head > bound)
        .take_while(|h| h.head >= stored)
        .find(|h| key.starts_with(&h.prefix))
        .map_or(stored, |h| h.head)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn revision(mod_revision: i64, create_revision: i64, deleted: bool) -> StoredRevision {
        StoredRevision {
            mod_revision: Revision(mod_revision),
            create_revision: Revision(create_revision),
            deleted,
        }
    }

    fn key(newest: StoredRevision, before: Option<StoredRevision>) -> StoredKey {
        StoredKey {
            key_id: crate::store::KeyId(1),
            key: b"/registry/configmaps/shop/web-config".to_vec(),
            newest,
            before,
        }
    }

    #[test]
    fn a_key_gone_before_the_unbroken_history_was_deleted_before_it_began() {
        let k = key(revision(80, 70, false), None);
        assert_eq!(
            ended(&k, false, Revision(150), Revision(200)).unwrap(),
            Some((revision(80, 70, false), Revision(149)))
        );
        // Still there: nothing to infer.
        assert_eq!(ended(&k, true, Revision(150), Revision(200)).unwrap(), None);
        // Already a tombstone: nothing either.
        assert_eq!(
            ended(
                &key(revision(90, 70, true), None),
                false,
                Revision(150),
                Revision(200)
            )
            .unwrap(),
            None
        );
    }

    #[test]
    fn a_key_gone_inside_the_unbroken_history_is_an_incomplete_history() {
        let e = ended(
            &key(revision(160, 70, false), None),
            false,
            Revision(150),
            Revision(200),
        )
        .unwrap_err();
        assert_eq!(
            (e.stored, e.covered_from, e.head),
            (Revision(160), Revision(150), Revision(200))
        );
        assert!(
            e.to_string()
                .starts_with("history incomplete: /registry/configmaps/shop/web-config"),
            "{e}"
        );
    }

    #[test]
    fn a_generation_recreated_in_the_gap_ends_the_one_before() {
        // Recreated at 120 (in the gap before 150): the old generation
        // ended by 119.
        let k = key(revision(120, 120, false), Some(revision(80, 70, false)));
        assert_eq!(
            ended(&k, true, Revision(150), Revision(200)).unwrap(),
            Some((revision(80, 70, false), Revision(119)))
        );
        // Recreated at 170, inside the unbroken history, but the delete fell
        // before it began.
        let k = key(revision(180, 170, false), Some(revision(80, 70, false)));
        assert_eq!(
            ended(&k, true, Revision(150), Revision(200)).unwrap(),
            Some((revision(80, 70, false), Revision(149)))
        );
        // A stored delete before the new generation: nothing to infer.
        let k = key(revision(120, 120, false), Some(revision(100, 70, true)));
        assert_eq!(ended(&k, true, Revision(150), Revision(200)).unwrap(), None);
        // The old generation stored live inside the unbroken history.
        assert!(ended(
            &key(revision(180, 170, false), Some(revision(160, 70, false))),
            true,
            Revision(150),
            Revision(200)
        )
        .is_err());
    }

    #[test]
    fn a_run_that_read_nothing_new_infers_nothing() {
        let k = key(revision(80, 70, false), None);
        assert_eq!(ended(&k, false, Revision(300), Revision(200)).unwrap(), None);
    }

    #[test]
    fn the_delete_came_after_the_last_head_that_saw_the_key() {
        let heads = [
            RunHead {
                head: Revision(90),
                prefix: b"/registry/".to_vec(),
            },
            RunHead {
                head: Revision(100),
                prefix: b"/registry/".to_vec(),
            },
            RunHead {
                head: Revision(110),
                prefix: b"/registry/secrets/".to_vec(),
            },
            RunHead {
                head: Revision(160),
                prefix: b"/registry/".to_vec(),
            },
        ];
        let key = b"/registry/configmaps/shop/web-config";
        assert_eq!(last_seen(&heads, key, Revision(80), Revision(149)), Revision(100));
        assert_eq!(last_seen(&heads, key, Revision(95), Revision(149)), Revision(100));
        assert_eq!(
            last_seen(&heads, key, Revision(105), Revision(149)),
            Revision(105)
        );
        assert_eq!(last_seen(&[], key, Revision(80), Revision(149)), Revision(80));
    }
}
