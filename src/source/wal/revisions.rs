//! Which revision each WAL entry wrote, found by applying the entries in
//! index order as etcd does (`server/etcdserver/apply`,
//! `server/storage/mvcc`) and checking the result against the db.
//!
//! etcd gives revisions as it applies entries: a put, a delete that
//! removes a key, a txn whose chosen branch changes a key, and a lease
//! revoke that deletes attached keys each raise the revision by one (a
//! txn's writes share it); a txn's compares are evaluated on the keys as
//! they are, a missing key comparing as all zeros and never equal by
//! value; a put on a lease already revoked is refused. Everything else
//! (reads, lease grants, compactions, membership, auth and v2 requests)
//! raises nothing.
//!
//! A log that starts at entry 1 starts from an empty store at revision 1,
//! so applying it places every write exactly. The result is checked
//! against everything the db holds, as it goes and at the end: every
//! revision above the db's compaction whole, each key's write it kept at
//! the compaction, its head revision and each key at its head. A mismatch
//! means the db and the log are not one member's (or one of them is
//! damaged), and is said. The check needs the db's writes first
//! ([`Facts`]); the replay holds only the live keys' counters and value
//! digests, so a caller can apply the log once to check it and again to
//! store what it wrote.
//!
//! A log that starts later (the member took a raft snapshot and removed
//! older segments) starts from a state neither it nor the db holds: the
//! revision it started under, and the keys it touches before writing
//! them. [`place`] searches for them backward from the db's head
//! (`purged/`); [`Placer::purged`] then replays the log forward from
//! what it found, each txn taking the branch the search decided, through
//! the same checks.
//!
//! Entries after the db's consistent index (a member's files copied while
//! it ran: the db is written every 100 ms, the log at every entry) start
//! from the state the db holds, whole: each live key's counters and value
//! and the leases in its `lease` bucket. Those the log's last commit index
//! covers are applied on that state ([`Placer::at_head`], or the same
//! replay continued past [`Placer::finish`]), exactly, as etcd applies
//! them when it restarts.

mod purged;

pub use purged::{place, Start, Steps};

use super::{CompareTarget, Entry, Op, PutRequest, Request, RequestOp, TxnRequest};
use crate::source::{Record, Revision};
use sha2::{Digest, Sha256};
use std::collections::{BTreeMap, HashMap, HashSet};

/// A value's identity: the first 16 bytes of its SHA-256.
pub type ValueDigest = [u8; 16];

/// The digest of a value.
pub fn digest(value: &[u8]) -> ValueDigest {
    let full = Sha256::digest(value);
    let mut d = [0u8; 16];
    d.copy_from_slice(&full[..16]);
    d
}

/// What the db holds, to check a replay against, in memory a few dozen
/// bytes a revision: each key's write kept at the compaction and its
/// newest, and a digest of each revision above the compaction.
#[derive(Debug, Default)]
pub struct Facts {
    /// The revision after the entry it applied last.
    pub revision: Revision,
    /// Its compaction: revisions above it are whole.
    pub compacted: Revision,
    keys: HashMap<Vec<u8>, KeyFacts>,
    /// The leases the db holds (its `lease` bucket), which a put may name.
    pub leases: Vec<i64>,
    /// Each revision above `compacted`: the sum of its writes' digests
    /// ([`write_digest`]), which does not depend on their order.
    whole: BTreeMap<Revision, u128>,
}

/// One key as the db holds it.
#[derive(Clone, Debug, Default)]
struct KeyFacts {
    /// Its write at or below the compaction (etcd keeps each key's newest
    /// there, unless a tombstone), and its state after it.
    kept: Option<Fact>,
    kept_state: Option<KeyState>,
    /// Its newest write.
    newest: Option<Fact>,
    /// Its state after that write, unless a delete.
    head: Option<KeyState>,
}

/// One write the db holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Fact {
    revision: Revision,
    /// `None` for a tombstone.
    value: Option<ValueDigest>,
}

/// A write's identity: its key and value (`None`: a delete).
fn write_digest(key: &[u8], value: Option<ValueDigest>) -> u128 {
    let mut h = Sha256::new();
    h.update((key.len() as u64).to_be_bytes());
    h.update(key);
    match value {
        Some(v) => h.update(v),
        None => h.update(b"deleted"),
    }
    let full = h.finalize();
    u128::from_be_bytes(full[..16].try_into().expect("16 bytes"))
}

impl Facts {
    /// Facts at `revision`, compacted at `compacted`, to fill with
    /// [`Facts::add`].
    pub fn new(revision: Revision, compacted: Revision) -> Facts {
        Facts {
            revision,
            compacted,
            ..Facts::default()
        }
    }

    /// Adds one record the db holds, in any order, each once.
    pub fn add(&mut self, r: &Record) {
        let fact = Fact {
            revision: r.mod_revision,
            value: (!r.deleted).then(|| digest(&r.value)),
        };
        if r.mod_revision > self.compacted {
            let sum = self.whole.entry(r.mod_revision).or_default();
            *sum = sum.wrapping_add(write_digest(&r.key, fact.value));
        }
        if !self.keys.contains_key(r.key.as_slice()) {
            self.keys.insert(r.key.clone(), KeyFacts::default());
        }
        let held = self.keys.get_mut(r.key.as_slice()).expect("inserted above");
        let state = fact.value.map(|value| KeyState {
            mod_revision: r.mod_revision,
            create_revision: r.create_revision,
            version: r.version,
            lease: r.lease,
            value,
        });
        if r.mod_revision <= self.compacted {
            held.kept = Some(fact);
            held.kept_state = state.clone();
        }
        if held.newest.is_none_or(|n| n.revision < r.mod_revision) {
            held.newest = Some(fact);
            held.head = state;
        }
    }
}

/// Places the writes of a log's entries, given in index order up to the
/// one the db applied last, by replaying them ([`Placer::apply`]), checking
/// each against the db as it goes and the whole at [`Placer::finish`].
pub struct Placer<'f> {
    /// What it checks against; `None` for a log already checked.
    facts: Option<&'f Facts>,
    replay: Replay,
    /// The keys whose write the db kept at its compaction the replay wrote
    /// (those above are checked revision by revision).
    found: HashSet<&'f [u8]>,
    /// The index of the entry applied last.
    last: Option<u64>,
    /// For a log that starts after a raft snapshot, each txn's branch from
    /// its first entry on, as [`place`] decided them.
    branches: Option<(u64, Vec<bool>)>,
    counters_unknown: u64,
    /// The revision the log starts after: the db's writes up to it are
    /// not the log's to give.
    after: Revision,
}

/// Why a log cannot be placed: the entry (its index) and what.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("entry {index}: {why}")]
pub struct Unplaced {
    pub index: u64,
    pub why: String,
}

impl<'f> Placer<'f> {
    /// A placer checking against `facts`.
    pub fn new(facts: &'f Facts) -> Placer<'f> {
        Placer {
            facts: Some(facts),
            ..Placer::again()
        }
    }

    /// A placer for a log [`Placer::new`] already checked: the same writes,
    /// not checked again ([`Placer::finish`] has nothing to check).
    pub fn again() -> Placer<'f> {
        Placer {
            facts: None,
            replay: Replay {
                revision: Revision(1),
                ..Replay::default()
            },
            found: HashSet::new(),
            last: None,
            branches: None,
            counters_unknown: 0,
            after: Revision(0),
        }
    }

    /// A placer for the entries after `applied`, the db's consistent index,
    /// starting from the state `facts` holds at its head: not checked (the
    /// db holds none of what they write).
    pub fn at_head(facts: &Facts, applied: u64) -> Placer<'f> {
        let keys = facts
            .keys
            .iter()
            .filter_map(|(k, held)| Some((k.clone(), held.head.clone()?)))
            .collect();
        Placer {
            facts: None,
            replay: Replay {
                keys,
                leases: facts.leases.iter().map(|&id| (id, true)).collect(),
                revision: facts.revision,
            },
            found: HashSet::new(),
            last: Some(applied),
            branches: None,
            counters_unknown: 0,
            after: Revision(0),
        }
    }

    /// A placer checking against `facts` a log that starts after a raft
    /// snapshot, from where [`place`] found it starts: the keys the log
    /// writes as they were then, every other key as the db holds it at its
    /// head (the log does not change it).
    pub fn purged(facts: &'f Facts, start: &Start) -> Placer<'f> {
        let mut keys: HashMap<Vec<u8>, KeyState> = facts
            .keys
            .iter()
            .filter_map(|(k, held)| Some((k.clone(), held.head.clone()?)))
            .collect();
        for (key, state) in &start.keys {
            match state {
                Some(s) => keys.insert(key.clone(), s.clone()),
                None => keys.remove(key),
            };
        }
        Placer {
            facts: Some(facts),
            replay: Replay {
                keys,
                leases: start.leases.iter().map(|&id| (id, true)).collect(),
                revision: start.revision,
            },
            found: HashSet::new(),
            last: Some(start.first - 1),
            branches: Some((start.first, start.branches.clone())),
            counters_unknown: 0,
            after: start.revision,
        }
    }

    /// A copy of a placer as it stands that checks nothing, to apply the
    /// same entries again later.
    pub fn detached(&self) -> Placer<'static> {
        Placer {
            facts: None,
            replay: self.replay.clone(),
            found: HashSet::new(),
            last: self.last,
            branches: self.branches.clone(),
            counters_unknown: 0,
            after: self.after,
        }
    }

    /// The index of the entry it applies next.
    pub fn expects(&self) -> u64 {
        self.last.map_or(1, |i| i + 1)
    }

    /// Applies the next entry; the writes it made as a `follow` run records
    /// them (one revision, one record per key; a delete's record carries the
    /// create revision of the generation it ended), empty when it wrote
    /// nothing. The writes of a generation a log after a raft snapshot
    /// cannot give the counters of are left out and counted
    /// ([`Placer::counters_unknown`]); the delete that ends it is given,
    /// naming no generation (as a db file's tombstone).
    pub fn apply(&mut self, entry: &Entry) -> Result<Vec<Record>, Unplaced> {
        let mut writes = self.apply_checked(entry)?;
        let before = writes.len();
        writes.retain(|w| w.deleted || w.create_revision != purged::UNKNOWN_GENERATION);
        self.counters_unknown += (before - writes.len()) as u64;
        for w in writes
            .iter_mut()
            .filter(|w| w.create_revision == purged::UNKNOWN_GENERATION)
        {
            w.create_revision = Revision(0);
        }
        Ok(writes)
    }

    /// The writes [`Placer::apply`] left out, their counters unknown.
    pub fn counters_unknown(&self) -> u64 {
        self.counters_unknown
    }

    fn apply_checked(&mut self, entry: &Entry) -> Result<Vec<Record>, Unplaced> {
        let fail = |why: String| Unplaced {
            index: entry.index,
            why,
        };
        let expected = self.expects();
        if entry.index != expected {
            return Err(fail(match self.last {
                None => "the log starts after a raft snapshot, from a state the db no longer holds: \
                         placing it is not supported yet"
                    .into(),
                Some(last) => format!("the log skips from entry {last} to {}", entry.index),
            }));
        }
        self.last = Some(entry.index);
        let branch = self.branches.as_ref().and_then(|(first, branches)| {
            let at = entry.index.checked_sub(*first)?;
            branches.get(usize::try_from(at).ok()?).copied()
        });
        let writes = self.replay.apply(&entry.request, branch).map_err(fail)?;
        let Some(first) = writes.first() else {
            return Ok(writes);
        };
        let r = first.mod_revision;
        let Some(facts) = self.facts else {
            return Ok(writes);
        };
        let value = |w: &Record| (!w.deleted).then(|| digest(&w.value));
        if r > facts.compacted {
            let sum = writes
                .iter()
                .fold(0u128, |sum, w| sum.wrapping_add(write_digest(&w.key, value(w))));
            if facts.whole.get(&r) != Some(&sum) {
                return Err(fail(format!(
                    "the log and the db disagree: revision {r} is not what the log writes there ({})",
                    String::from_utf8_lossy(&first.key)
                )));
            }
        } else {
            for w in &writes {
                let fact = Fact {
                    revision: r,
                    value: value(w),
                };
                if let Some((key, held)) = facts.keys.get_key_value(w.key.as_slice()) {
                    if held.kept == Some(fact) {
                        self.found.insert(key.as_slice());
                    }
                }
            }
        }
        Ok(writes)
    }

    /// Checks the log so far against the db, whose consistent index it has
    /// reached: its revision, every write the db kept, and each key's head.
    /// Entries applied after it are not checked (the db holds none of
    /// them); a second call checks nothing.
    pub fn finish(&mut self) -> Result<(), Unplaced> {
        let Some(facts) = self.facts.take() else {
            return Ok(());
        };
        let found = std::mem::take(&mut self.found);
        let fail = |why: String| Unplaced {
            index: self.last.unwrap_or(0),
            why: format!("the log and the db disagree: {why}"),
        };
        let name = |k: &[u8]| String::from_utf8_lossy(k).into_owned();
        let replay = &self.replay;
        if replay.revision != facts.revision {
            return Err(fail(format!(
                "the log ends at revision {}, the db at {}",
                replay.revision, facts.revision
            )));
        }
        for (key, held) in &facts.keys {
            let before_log = |f: &Fact| f.revision <= self.after;
            if let Some(kept) = held
                .kept
                .filter(|f| !found.contains(key.as_slice()) && !before_log(f))
            {
                return Err(fail(format!(
                    "the log does not write {} at revision {}",
                    name(key),
                    kept.revision
                )));
            }
            let head = held.newest.filter(|f| f.value.is_some()).map(|f| f.revision);
            if head != replay.keys.get(key).map(|s| s.mod_revision) {
                return Err(fail(format!(
                    "{} ends otherwise in the log than in the db",
                    name(key)
                )));
            }
        }
        let lost = replay.keys.keys().filter(|k| !facts.keys.contains_key(*k)).min();
        if let Some(k) = lost {
            return Err(fail(format!(
                "the log leaves {}, which the db does not hold",
                name(k)
            )));
        }
        Ok(())
    }
}

/// A live key as the replay has it.
#[derive(Clone, Debug, PartialEq, Eq)]
struct KeyState {
    mod_revision: Revision,
    create_revision: Revision,
    version: i64,
    lease: i64,
    value: ValueDigest,
}

/// The store as the log leaves it, entry by entry.
#[derive(Clone, Default)]
struct Replay {
    keys: HashMap<Vec<u8>, KeyState>,
    /// Leases granted in the log; false once revoked.
    leases: HashMap<i64, bool>,
    revision: Revision,
}

/// A change a request makes: a key's new state and value, `None` for a
/// delete.
type Change = (Vec<u8>, Option<(KeyState, Vec<u8>)>);

impl Replay {
    /// Applies one request; the writes it made, at one revision. `Err`
    /// names a request this replay cannot follow. A txn takes `branch`
    /// where given (its compares held or not) rather than comparing.
    fn apply(&mut self, request: &Request, branch: Option<bool>) -> Result<Vec<Record>, String> {
        let mut changes = Vec::new();
        match request {
            Request::Put(p) => self.put(p, &mut changes)?,
            Request::DeleteRange(d) => self.delete(&d.key, &d.range_end, &mut changes),
            Request::Txn(t) => self.txn(t, branch, &mut changes)?,
            Request::LeaseGrant(g) => {
                self.leases.insert(g.id, true);
            }
            Request::LeaseRevoke(r) => {
                let mut attached: Vec<&Vec<u8>> = self
                    .keys
                    .iter()
                    .filter(|(_, s)| s.lease == r.id)
                    .map(|(k, _)| k)
                    .collect();
                attached.sort();
                changes.extend(attached.into_iter().map(|k| (k.clone(), None)));
                self.leases.insert(r.id, false);
            }
            _ => {}
        }
        if changes.is_empty() {
            return Ok(Vec::new());
        }
        self.revision = self.revision.next();
        let r = self.revision;
        let mut writes = Vec::with_capacity(changes.len());
        for (key, state) in changes {
            match state {
                Some((mut s, value)) => {
                    s.mod_revision = r;
                    if s.version == 1 {
                        s.create_revision = r;
                    }
                    writes.push(Record {
                        key: key.clone(),
                        mod_revision: r,
                        create_revision: s.create_revision,
                        version: s.version,
                        lease: s.lease,
                        value,
                        deleted: false,
                    });
                    self.keys.insert(key, s);
                }
                None => {
                    let ended = self.keys.remove(&key).map_or(Revision(0), |s| s.create_revision);
                    writes.push(Record {
                        key,
                        mod_revision: r,
                        create_revision: ended,
                        version: 0,
                        lease: 0,
                        value: Vec::new(),
                        deleted: true,
                    });
                }
            }
        }
        Ok(writes)
    }

    /// `key` as the changes so far in this request leave it.
    fn current<'a>(&'a self, key: &[u8], changes: &'a [Change]) -> Option<&'a KeyState> {
        match changes.iter().rev().find(|(k, _)| k == key) {
            Some((_, s)) => s.as_ref().map(|(s, _)| s),
            None => self.keys.get(key),
        }
    }

    fn put(&self, p: &PutRequest, changes: &mut Vec<Change>) -> Result<(), String> {
        if p.ignore_value || p.ignore_lease {
            return Err("a put keeping the key's value or lease (ignore_value, ignore_lease)".into());
        }
        if p.lease != 0 && self.leases.get(&p.lease) != Some(&true) {
            // etcd refuses a put on a lease it does not have: nothing
            // written. The log starts from an empty store, so it granted
            // every lease there is.
            return Ok(());
        }
        let state = match self.current(&p.key, changes) {
            Some(s) => KeyState {
                version: s.version + 1,
                lease: p.lease,
                value: digest(&p.value),
                ..s.clone()
            },
            None => KeyState {
                mod_revision: Revision(0),
                create_revision: Revision(0),
                version: 1,
                lease: p.lease,
                value: digest(&p.value),
            },
        };
        changes.push((p.key.clone(), Some((state, p.value.clone()))));
        Ok(())
    }

    fn delete(&self, key: &[u8], range_end: &[u8], changes: &mut Vec<Change>) {
        let mut deleted: Vec<Vec<u8>> = match range_end {
            [] => vec![key.to_vec()],
            // "\0" as range_end: every key from `key` on.
            [0] => self
                .keys
                .keys()
                .filter(|k| k.as_slice() >= key)
                .cloned()
                .collect(),
            end => self
                .keys
                .keys()
                .filter(|k| k.as_slice() >= key && k.as_slice() < end)
                .cloned()
                .collect(),
        };
        deleted.sort();
        for k in deleted {
            if self.current(&k, changes).is_some() {
                changes.push((k, None));
            }
        }
    }

    fn txn(&self, t: &TxnRequest, branch: Option<bool>, changes: &mut Vec<Change>) -> Result<(), String> {
        let mut holds = true;
        for c in t.compare.iter().filter(|_| branch.is_none()) {
            if !c.range_end.is_empty() {
                return Err("a txn comparing a key range".into());
            }
            holds &= compare(c, self.keys.get(&c.key))?;
        }
        let holds = branch.unwrap_or(holds);
        let ops = match holds {
            true => &t.success,
            false => &t.failure,
        };
        self.ops(ops, changes)
    }

    fn ops(&self, ops: &[RequestOp], changes: &mut Vec<Change>) -> Result<(), String> {
        for op in ops {
            match &op.request {
                Some(Op::Put(p)) => self.put(p, changes)?,
                Some(Op::DeleteRange(d)) => self.delete(&d.key, &d.range_end, changes),
                Some(Op::Range(_)) | None => {}
                Some(Op::Txn(t)) => self.txn(t, None, changes)?,
            }
        }
        Ok(())
    }
}

/// etcd's compare of one key (`compareKV`).
fn compare(c: &super::Compare, state: Option<&KeyState>) -> Result<bool, String> {
    let ordering = match (state, &c.target_union) {
        (None, Some(CompareTarget::Value(_))) => return Ok(false),
        (
            None,
            Some(
                CompareTarget::Version(v)
                | CompareTarget::CreateRevision(v)
                | CompareTarget::ModRevision(v)
                | CompareTarget::Lease(v),
            ),
        ) => 0.cmp(v),
        (Some(s), Some(CompareTarget::Version(v))) => s.version.cmp(v),
        (Some(s), Some(CompareTarget::CreateRevision(v))) => s.create_revision.0.cmp(v),
        (Some(s), Some(CompareTarget::ModRevision(v))) => s.mod_revision.0.cmp(v),
        (Some(s), Some(CompareTarget::Lease(v))) => s.lease.cmp(v),
        (Some(s), Some(CompareTarget::Value(v))) => {
            return match c.result {
                0 => Ok(s.value == digest(v)),
                3 => Ok(s.value != digest(v)),
                _ => Err("a txn comparing a value by order".into()),
            }
        }
        (_, None) => return Err("a compare with no target".into()),
    };
    use std::cmp::Ordering::*;
    Ok(match c.result {
        0 => ordering == Equal,
        1 => ordering == Greater,
        2 => ordering == Less,
        3 => ordering != Equal,
        other => return Err(format!("a compare with result {other}")),
    })
}

impl crate::source::Sink for Facts {
    type Error = std::convert::Infallible;

    fn record(&mut self, record: Record) -> Result<bool, Self::Error> {
        self.add(&record);
        Ok(true)
    }
}
