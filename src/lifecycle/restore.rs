//! Whether etcd still holds the history the database stored for it: a run
//! that would continue an earlier complete run first checks that etcd was
//! not restored (or rewound) since. etcd's head and compaction revision
//! only ever grow, and at the earlier run's head `H` every key's newest
//! write is fixed forever: the database stored exactly that (the earlier
//! run's self-check said so). A restore from an older copy shows as a head
//! or compaction revision below the earlier run's, or, once new writes
//! carried the head past `H` again (reusing revision numbers for other
//! writes), as keys whose newest write at `H` differs.
//!
//! Cost: one key-only range read of the prefix at `H`, paged, merged in key
//! order with the database's keys as `H` sees them (paged too), so memory
//! holds a page of each; about what a run's self-check already reads.
//!
//! A run that finds a restore records it and fails, storing nothing more:
//! its revisions would reuse `(key, mod_revision)` pairs the database holds
//! with other content, and the writer keeps the first it stored.

use super::plan::Plan;
use crate::source::bolt::BoltDb;
use crate::source::db_file;
use crate::source::etcd::{Etcd, Scope};
use crate::source::filter::ResourceFilter;
use crate::source::{LiveKey, ReadError, Revision};
use crate::store::restore::{Divergence, Restore, Written};
use crate::store::vanished::StoredKey;
use crate::store::ClusterId;
use crate::store::{Backend, Previous, RunFact, RunId, StoreError};
use anyhow::Result;
use std::collections::VecDeque;

/// A run refused because etcd no longer holds the stored history.
#[derive(Debug)]
pub struct Restored(pub Restore);

impl std::error::Error for Restored {}

impl std::fmt::Display for Restored {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}; this database holds the history etcd had before: record the restored cluster into a new \
             database (--db)",
            self.0
        )?;
        f.write_str(match self.0.etcd_cluster {
            Some(_) => ", or, if it is another cluster, give it another --cluster name",
            None => ", or a data file of it under another --cluster-id",
        })
    }
}

/// What a source at `head` and `compact` shows against the run `plan`
/// continues.
enum Check {
    /// Nothing to check: no earlier run, or the source no longer holds its
    /// head (a warning said so).
    Nothing,
    /// Its head or compaction revision went backwards.
    Rewound(Restore),
    /// Compare the keys at the earlier run's head.
    Keys(Previous),
}

fn check(plan: &Plan, prefix: &str, head: Revision, compact: Revision) -> Check {
    let Some(p) = plan.previous else {
        return Check::Nothing;
    };
    if let Some(change) = &plan.etcd_cluster {
        let mut r = restore(&p, prefix, head, compact, None);
        r.etcd_cluster = Some(change.clone());
        return Check::Rewound(r);
    }
    if head < p.head || p.compact.is_some_and(|c| compact < c) {
        return Check::Rewound(restore(&p, prefix, head, compact, None));
    }
    if compact > p.head {
        tracing::warn!(
            "the source compacted revision {} (run {}'s head): whether etcd was restored since could not be checked",
            p.head,
            p.run.0
        );
        return Check::Nothing;
    }
    Check::Keys(p)
}

fn restore(
    p: &Previous,
    prefix: &str,
    head: Revision,
    compact: Revision,
    diverged: Option<Divergence>,
) -> Restore {
    Restore {
        previous_run: p.run.0,
        prefix: prefix.to_string(),
        previous_head: p.head,
        previous_compact: p.compact,
        head,
        compact,
        diverged,
        etcd_cluster: None,
    }
}

/// Records `restore` on `run` and fails it.
pub(super) fn refuse(store: &dyn Backend, run: RunId, restore: Restore) -> Result<()> {
    store.record(run, RunFact::Restored(&restore))?;
    Err(Restored(restore).into())
}

/// What a live run checks before reading: a head or compaction revision
/// gone backwards, else the keys at the earlier run's head (when etcd
/// still retains it; when not, the check cannot be made and says so).
pub(super) async fn check_live(
    store: &dyn Backend,
    etcd: &Etcd,
    plan: &Plan,
    (head, compact): (Revision, Revision),
    (prefix, filter): (&str, &ResourceFilter),
    page: i64,
) -> Result<Option<Restore>> {
    let p = match check(plan, prefix, head, compact) {
        Check::Nothing => return Ok(None),
        Check::Rewound(restore) => return Ok(Some(restore)),
        Check::Keys(p) => p,
    };
    let mut merge = Merge::new(store, plan.cluster, prefix, filter, p.head);
    let scope = Scope {
        prefix: prefix.as_bytes(),
    };
    etcd.each_live_key(scope, p.head, page, |k| merge.etcd(k).map(|()| true))
        .await
        .map_err(|e| match e {
            ReadError::Etcd(e) => anyhow::Error::from(e),
            ReadError::File(e) => e.into(),
            ReadError::Sink(e) => e.into(),
        })?;
    Ok(merge
        .finish()?
        .map(|d| restore(&p, prefix, head, compact, Some(d))))
}

/// What a data-file run checks before reading, as [`check_live`] does,
/// with the keys the file holds at the earlier run's head (all in memory,
/// as a data-file run's other key sets are). A salvaging read does not
/// compare keys: the damage could hide some; nor does a run whose earlier
/// head lies past `db_head`, the db's own (its member's log took it on).
pub(super) fn check_file(
    store: &dyn Backend,
    db: &BoltDb,
    plan: &Plan,
    (head, compact): (Revision, Revision),
    db_head: Revision,
    (prefix, filter): (&str, &ResourceFilter),
    salvage: bool,
) -> Result<Option<Restore>> {
    let p = match check(plan, prefix, head, compact) {
        Check::Nothing => return Ok(None),
        Check::Rewound(restore) => return Ok(Some(restore)),
        Check::Keys(_) if salvage => return Ok(None),
        // The earlier run's head lies past the db, in its member's log:
        // the db cannot say how the keys stood there.
        Check::Keys(p) if p.head > db_head => return Ok(None),
        Check::Keys(p) => p,
    };
    let mut merge = Merge::new(store, plan.cluster, prefix, filter, p.head);
    for k in db_file::live_keys_at(db, prefix.as_bytes(), p.head)? {
        merge.etcd(k)?;
    }
    Ok(merge
        .finish()?
        .map(|d| restore(&p, prefix, head, compact, Some(d))))
}

/// Stored keys read per query.
const PAGE: usize = 1000;

/// etcd's live keys at a revision, in key order, merged with the keys the
/// database holds as that revision sees them, a page at a time.
struct Merge<'a> {
    store: &'a dyn Backend,
    cluster: ClusterId,
    prefix: &'a str,
    filter: &'a ResourceFilter,
    at: Revision,
    page: VecDeque<StoredKey>,
    /// The last stored key read, and whether there are more.
    after: Option<Vec<u8>>,
    more: bool,
    found: Option<Divergence>,
}

impl<'a> Merge<'a> {
    fn new(
        store: &'a dyn Backend,
        cluster: ClusterId,
        prefix: &'a str,
        filter: &'a ResourceFilter,
        at: Revision,
    ) -> Self {
        Merge {
            store,
            cluster,
            prefix,
            filter,
            at,
            page: VecDeque::new(),
            after: None,
            more: true,
            found: None,
        }
    }

    /// The next stored key the run records, without taking it.
    fn peek(&mut self) -> Result<Option<&StoredKey>, StoreError> {
        loop {
            while let Some(k) = self.page.front() {
                if self.filter.records_key(&k.key, self.prefix) {
                    break;
                }
                self.page.pop_front();
            }
            if !self.page.is_empty() || !self.more {
                return Ok(self.page.front());
            }
            let prefix = self.prefix.as_bytes();
            let read = self
                .store
                .stored_keys(self.cluster, prefix, self.at, self.after.as_deref(), PAGE)?;
            self.more = read.len() == PAGE;
            self.after = read.last().map(|k| k.key.clone());
            self.page.extend(read);
        }
    }

    /// Notes a key whose newest write differs.
    fn differs(&mut self, key: &[u8], stored: Option<Written>, etcd: Option<Written>) {
        match &mut self.found {
            Some(d) => d.keys += 1,
            None => {
                self.found = Some(Divergence {
                    at: self.at,
                    keys: 1,
                    key: String::from_utf8_lossy(key).into_owned(),
                    stored,
                    etcd,
                })
            }
        }
    }

    /// Takes the next stored key, noting it if it is live (etcd does not
    /// hold it).
    fn stored_only(&mut self) {
        if let Some(k) = self.page.pop_front() {
            if let Some(w) = live(&k) {
                self.differs(&k.key, Some(w), None);
            }
        }
    }

    /// One key the source holds live at the revision, in key order.
    fn etcd(&mut self, k: LiveKey) -> Result<(), StoreError> {
        if !k.key.starts_with(self.prefix.as_bytes()) || !self.filter.records_key(&k.key, self.prefix) {
            return Ok(());
        }
        while self.peek()?.is_some_and(|s| s.key < k.key) {
            self.stored_only();
        }
        let held = Written {
            mod_revision: k.mod_revision,
            create_revision: k.create_revision,
        };
        let stored = match self.peek()? {
            Some(s) if s.key == k.key => {
                let w = live(s);
                self.page.pop_front();
                w
            }
            _ => None,
        };
        if stored != Some(held) {
            self.differs(&k.key, stored, Some(held));
        }
        Ok(())
    }

    /// The keys that differ, once etcd's keys were all given.
    fn finish(mut self) -> Result<Option<Divergence>, StoreError> {
        while self.peek()?.is_some() {
            self.stored_only();
        }
        Ok(self.found)
    }
}

/// A stored key's newest write, when it is live.
fn live(k: &StoredKey) -> Option<Written> {
    (!k.newest.deleted).then_some(Written {
        mod_revision: k.newest.mod_revision,
        create_revision: k.newest.create_revision,
    })
}
