//! The log's entries as the search reads them: each a step of compares and
//! of each branch's writes, keys interned and values held as digests.

use super::super::{digest, ValueDigest};
use crate::source::wal::{CompareTarget, DeleteRangeRequest, Entry, Op, PutRequest, Request, RequestOp};
use std::collections::{HashMap, HashSet};

/// A key the log names: its index in [`Steps`]' keys.
pub(super) type KeyIx = u32;

/// What one entry does to the key space, without values.
pub(super) enum Step {
    /// Changes no key (reads, compactions, membership, grants).
    Nothing,
    Revoke(i64),
    /// A txn (a bare put or delete is one with no compares): its compares
    /// and each branch's writes.
    Txn {
        compares: Vec<Cmp>,
        success: Vec<Write>,
        failure: Vec<Write>,
    },
}

pub(super) struct Cmp {
    pub(super) key: KeyIx,
    pub(super) target: Target,
    /// etcd's `Compare.result`: 0 equal, 1 greater, 2 less, 3 not equal.
    pub(super) result: i32,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Target {
    Version(i64),
    Create(i64),
    Mod(i64),
    Lease(i64),
    Value(ValueDigest),
}

#[derive(Clone, Copy)]
pub(super) enum Write {
    Put {
        key: KeyIx,
        value: ValueDigest,
        lease: i64,
    },
    Delete(KeyIx),
}

impl Write {
    pub(super) fn key(&self) -> KeyIx {
        match *self {
            Write::Put { key, .. } | Write::Delete(key) => key,
        }
    }
}

/// The entries of a log from its first up to the db's consistent index,
/// as the search needs them: a few dozen bytes an entry.
pub struct Steps {
    pub(super) first: u64,
    pub(super) ids: HashMap<Vec<u8>, KeyIx>,
    pub(super) keys: Vec<Vec<u8>>,
    pub(super) steps: Vec<Step>,
    /// Where each lease was granted and revoked (step positions).
    pub(super) granted: HashMap<i64, usize>,
    pub(super) revoked: HashMap<i64, usize>,
    /// The first entry this search does not follow, and why.
    pub(super) unsupported: Option<(u64, &'static str)>,
    /// The position after the last such entry: a search may begin there.
    pub(super) supported_from: usize,
    /// The steps that name each key (compare or write it), in order.
    touches: Vec<Vec<u32>>,
    /// Leases some put names.
    leased: HashSet<i64>,
    /// The revokes that may have deleted keys (of a lease granted before
    /// the log, or one a put names), in order.
    deleting_revokes: Vec<usize>,
}

impl Steps {
    /// Steps of a log whose first entry is `first`.
    pub fn new(first: u64) -> Steps {
        Steps {
            first,
            ids: HashMap::new(),
            keys: Vec::new(),
            steps: Vec::new(),
            granted: HashMap::new(),
            revoked: HashMap::new(),
            unsupported: None,
            supported_from: 0,
            touches: Vec::new(),
            leased: HashSet::new(),
            deleting_revokes: Vec::new(),
        }
    }

    /// Adds the next entry.
    pub fn push(&mut self, entry: &Entry) {
        let step = self.step(&entry.request).unwrap_or_else(|why| {
            self.unsupported.get_or_insert((entry.index, why));
            self.supported_from = self.steps.len() + 1;
            Step::Nothing
        });
        let at = self.steps.len();
        if let Step::Txn {
            compares,
            success,
            failure,
        } = &step
        {
            let named = compares
                .iter()
                .map(|c| c.key)
                .chain(success.iter().chain(failure).map(Write::key));
            for key in named {
                let touched = &mut self.touches[key as usize];
                if touched.last() != Some(&(at as u32)) {
                    touched.push(at as u32);
                }
            }
        }
        self.steps.push(step);
    }

    /// The last step before `at` that names `key`.
    pub(super) fn previous(&self, key: KeyIx, at: usize) -> Option<usize> {
        let touched = &self.touches[key as usize];
        let before = touched.partition_point(|&t| (t as usize) < at);
        before.checked_sub(1).map(|i| touched[i] as usize)
    }

    /// Whether a revoke between steps `from` and `to` may have deleted keys.
    pub(super) fn deleting_revoke_between(&self, from: usize, to: usize) -> bool {
        let after = self.deleting_revokes.partition_point(|&r| r <= from);
        self.deleting_revokes.get(after).is_some_and(|&r| r < to)
    }

    fn key(&mut self, key: &[u8]) -> KeyIx {
        if let Some(&ix) = self.ids.get(key) {
            return ix;
        }
        let ix = self.keys.len() as KeyIx;
        self.keys.push(key.to_vec());
        self.touches.push(Vec::new());
        self.ids.insert(key.to_vec(), ix);
        ix
    }

    fn step(&mut self, request: &Request) -> Result<Step, &'static str> {
        let at = self.steps.len();
        Ok(match request {
            Request::Put(p) => Step::Txn {
                compares: Vec::new(),
                success: vec![self.put(p)?],
                failure: Vec::new(),
            },
            Request::DeleteRange(d) => Step::Txn {
                compares: Vec::new(),
                success: vec![self.delete(d)?],
                failure: Vec::new(),
            },
            Request::Txn(t) => {
                let mut compares = Vec::with_capacity(t.compare.len());
                for c in &t.compare {
                    if !c.range_end.is_empty() {
                        return Err("a txn comparing a key range");
                    }
                    let target = match &c.target_union {
                        Some(CompareTarget::Version(v)) => Target::Version(*v),
                        Some(CompareTarget::CreateRevision(v)) => Target::Create(*v),
                        Some(CompareTarget::ModRevision(v)) => Target::Mod(*v),
                        Some(CompareTarget::Lease(v)) => Target::Lease(*v),
                        Some(CompareTarget::Value(v)) => Target::Value(digest(v)),
                        None => return Err("a compare with no target"),
                    };
                    if !(0..=3).contains(&c.result) {
                        return Err("a compare with an unknown result");
                    }
                    let key = self.key(&c.key);
                    compares.push(Cmp {
                        key,
                        target,
                        result: c.result,
                    });
                }
                Step::Txn {
                    compares,
                    success: self.writes(&t.success)?,
                    failure: self.writes(&t.failure)?,
                }
            }
            Request::LeaseGrant(g) => {
                self.granted.insert(g.id, at);
                Step::Nothing
            }
            Request::LeaseRevoke(r) => {
                self.revoked.insert(r.id, at);
                if !self.granted.contains_key(&r.id) || self.leased.contains(&r.id) {
                    self.deleting_revokes.push(at);
                }
                Step::Revoke(r.id)
            }
            _ => Step::Nothing,
        })
    }

    fn put(&mut self, p: &PutRequest) -> Result<Write, &'static str> {
        if p.ignore_value || p.ignore_lease {
            return Err("a put keeping the key's value or lease");
        }
        if p.lease != 0 {
            self.leased.insert(p.lease);
        }
        Ok(Write::Put {
            key: self.key(&p.key),
            value: digest(&p.value),
            lease: p.lease,
        })
    }

    fn delete(&mut self, d: &DeleteRangeRequest) -> Result<Write, &'static str> {
        match d.range_end.is_empty() {
            true => Ok(Write::Delete(self.key(&d.key))),
            false => Err("a delete of a key range"),
        }
    }

    fn writes(&mut self, ops: &[RequestOp]) -> Result<Vec<Write>, &'static str> {
        let mut writes: Vec<Write> = Vec::new();
        for op in ops {
            let write = match &op.request {
                Some(Op::Put(p)) => self.put(p)?,
                Some(Op::DeleteRange(d)) => self.delete(d)?,
                Some(Op::Txn(_)) => return Err("a txn inside a txn"),
                Some(Op::Range(_)) | None => continue,
            };
            if writes.iter().any(|w| w.key() == write.key()) {
                return Err("a txn writing one key twice");
            }
            writes.push(write);
        }
        Ok(writes)
    }
}
