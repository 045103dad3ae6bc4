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
//! so applying it places every write exactly. The result is then checked
//! against everything the db holds: its head revision, every revision
//! above its compaction whole, each key's write it kept at the
//! compaction, and each key at its head. A mismatch means the db and the
//! log are not one member's (or one of them is damaged), and is said.
//!
//! A log that starts later (the member took a raft snapshot and removed
//! older segments) starts from a state neither it nor the db holds: the
//! revision it started under, and the keys it touches before writing
//! them. Placing it is not done yet, and says so.

use super::{CompareTarget, Entry, Op, PutRequest, Request, RequestOp, TxnRequest};
use crate::source::Record;
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

/// Where an entry's write landed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Placed {
    /// It wrote nothing.
    Nothing,
    /// It wrote this revision.
    At(i64),
}

/// Where each entry of a log wrote.
#[derive(Debug)]
pub struct Assigned {
    /// Each entry (index order) and where it wrote; empty when stopped.
    pub placed: Vec<(u64, Placed)>,
    /// The entry at which the log could not be placed, and why.
    pub stopped: Option<(u64, String)>,
}

/// One revision's writes: each key and its value, `None` for a delete.
type Written = Vec<(Vec<u8>, Option<ValueDigest>)>;

/// One write the db holds.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Fact {
    revision: i64,
    /// `None` for a tombstone.
    value: Option<ValueDigest>,
}

/// What the db holds: each key's writes, its head and its compaction.
#[derive(Debug, Default)]
pub struct Facts {
    /// The revision after the entry it applied last.
    pub revision: i64,
    /// Its compaction: revisions above it are whole.
    pub compacted: i64,
    keys: HashMap<Vec<u8>, Vec<Fact>>,
    /// Each revision above `compacted`: the keys it wrote.
    whole: BTreeMap<i64, Written>,
}

impl Facts {
    /// Facts at `revision`, compacted at `compacted`, to fill with
    /// [`Facts::add`].
    pub fn new(revision: i64, compacted: i64) -> Facts {
        Facts {
            revision,
            compacted,
            ..Facts::default()
        }
    }

    /// Adds one record the db holds; records come in revision order.
    pub fn add(&mut self, r: &Record) {
        let value = (!r.deleted).then(|| digest(&r.value));
        if r.mod_revision > self.compacted {
            self.whole
                .entry(r.mod_revision)
                .or_default()
                .push((r.key.clone(), value));
        }
        self.keys.entry(r.key.clone()).or_default().push(Fact {
            revision: r.mod_revision,
            value,
        });
    }
}

/// A live key as the replay has it.
#[derive(Clone, Debug, PartialEq, Eq)]
struct KeyState {
    mod_revision: i64,
    create_revision: i64,
    version: i64,
    lease: i64,
    value: ValueDigest,
}

/// The store as the log leaves it, entry by entry.
#[derive(Default)]
struct Replay {
    keys: HashMap<Vec<u8>, KeyState>,
    /// Leases granted in the log; false once revoked.
    leases: HashMap<i64, bool>,
    revision: i64,
    /// Each revision's writes.
    writes: BTreeMap<i64, Written>,
}

/// A change a request makes: a key's new state, `None` for a delete.
type Change = (Vec<u8>, Option<KeyState>);

impl Replay {
    /// Applies one request; the revision it wrote, if any. `Err` names a
    /// request this replay cannot follow.
    fn apply(&mut self, request: &Request) -> Result<Option<i64>, String> {
        let mut changes = Vec::new();
        match request {
            Request::Put(p) => self.put(p, &mut changes)?,
            Request::DeleteRange(d) => self.delete(&d.key, &d.range_end, &mut changes),
            Request::Txn(t) => self.txn(t, &mut changes)?,
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
            return Ok(None);
        }
        self.revision += 1;
        let r = self.revision;
        let mut held = Vec::with_capacity(changes.len());
        for (key, state) in changes {
            held.push((key.clone(), state.as_ref().map(|s| s.value)));
            match state {
                Some(mut s) => {
                    s.mod_revision = r;
                    if s.version == 1 {
                        s.create_revision = r;
                    }
                    self.keys.insert(key, s);
                }
                None => {
                    self.keys.remove(&key);
                }
            }
        }
        self.writes.insert(r, held);
        Ok(Some(r))
    }

    /// `key` as the changes so far in this request leave it.
    fn current<'a>(&'a self, key: &[u8], changes: &'a [Change]) -> Option<&'a KeyState> {
        match changes.iter().rev().find(|(k, _)| k == key) {
            Some((_, s)) => s.as_ref(),
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
                mod_revision: 0,
                create_revision: 0,
                version: 1,
                lease: p.lease,
                value: digest(&p.value),
            },
        };
        changes.push((p.key.clone(), Some(state)));
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

    fn txn(&self, t: &TxnRequest, changes: &mut Vec<Change>) -> Result<(), String> {
        let mut holds = true;
        for c in &t.compare {
            if !c.range_end.is_empty() {
                return Err("a txn comparing a key range".into());
            }
            holds &= compare(c, self.keys.get(&c.key))?;
        }
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
                Some(Op::Txn(t)) => self.txn(t, changes)?,
            }
        }
        Ok(())
    }

    /// Checks the replay against what the db holds; says the first
    /// difference.
    fn check(&self, facts: &Facts) -> Result<(), String> {
        let name = |k: &[u8]| String::from_utf8_lossy(k).into_owned();
        if self.revision != facts.revision {
            return Err(format!(
                "the log ends at revision {}, the db at {}",
                self.revision, facts.revision
            ));
        }
        for (r, held) in &facts.whole {
            let mut want = held.clone();
            let mut got = self.writes.get(r).cloned().unwrap_or_default();
            want.sort();
            got.sort();
            if want != got {
                let key = want
                    .first()
                    .or(got.first())
                    .map_or(String::new(), |(k, _)| name(k));
                return Err(format!("revision {r} ({key}) is not what the log writes there"));
            }
        }
        for (key, held) in &facts.keys {
            for f in held {
                let found = self
                    .writes
                    .get(&f.revision)
                    .is_some_and(|w| w.iter().any(|(k, v)| k == key && *v == f.value));
                if !found {
                    return Err(format!(
                        "the log does not write {} at revision {}",
                        name(key),
                        f.revision
                    ));
                }
            }
            let head = held.last().filter(|f| f.value.is_some()).map(|f| f.revision);
            if head != self.keys.get(key).map(|s| s.mod_revision) {
                return Err(format!("{} ends otherwise in the log than in the db", name(key)));
            }
        }
        let lost: HashSet<&Vec<u8>> = self
            .keys
            .keys()
            .filter(|k| !facts.keys.contains_key(*k))
            .collect();
        if let Some(k) = lost.into_iter().min() {
            return Err(format!("the log leaves {}, which the db does not hold", name(k)));
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
        (Some(s), Some(CompareTarget::CreateRevision(v))) => s.create_revision.cmp(v),
        (Some(s), Some(CompareTarget::ModRevision(v))) => s.mod_revision.cmp(v),
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

/// Places the writes of `entries` (index order, up to the one the db
/// applied last) by replaying them, and checks them against `facts`.
pub fn place(entries: &[Entry], facts: &Facts) -> Assigned {
    let stop = |at: u64, why: String| Assigned {
        placed: Vec::new(),
        stopped: Some((at, why)),
    };
    let Some(first) = entries.first() else {
        return Assigned {
            placed: Vec::new(),
            stopped: None,
        };
    };
    if first.index != 1 {
        return stop(
            first.index,
            "the log starts after a raft snapshot, from a state the db no longer holds: \
             placing it is not supported yet"
                .into(),
        );
    }
    let mut replay = Replay {
        revision: 1,
        ..Replay::default()
    };
    let mut placed = Vec::with_capacity(entries.len());
    for e in entries {
        match replay.apply(&e.request) {
            Ok(wrote) => placed.push((e.index, wrote.map_or(Placed::Nothing, Placed::At))),
            Err(why) => return stop(e.index, why),
        }
    }
    match replay.check(facts) {
        Ok(()) => Assigned {
            placed,
            stopped: None,
        },
        Err(why) => stop(first.index, format!("the log and the db disagree: {why}")),
    }
}
