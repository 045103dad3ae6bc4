//! Placing a log whose first segments etcd removed (it took a raft
//! snapshot): the log starts at some entry `N`, under a revision and a
//! state of the keys neither it nor the db holds.
//!
//! The search goes backward from what is exact: the db applied the log up
//! to its consistent index in the same transaction as the writes, so its
//! head revision is what the last raising entry up to there wrote, and its
//! head state is every key's state right after it. Each entry, from there
//! down to `N`, is undone under each outcome that fits what is known of
//! the keys right after it (a txn's branch; a bare put is a txn with no
//! compares): a write at revision `R` needs its key live at `R` with that
//! value after it; a branch needs its compares to hold on the keys before
//! it (the other branch, one of them to fail); above the db's compaction
//! the writes at `R` must be the db's revision `R` whole; and crossing the
//! compaction, every key must be what the db kept there. A success tells
//! the key's state before it (`mod_revision == X`: live at `X`; `== 0`:
//! absent; the version one less), so a wrong outcome contradicts within a
//! few entries, and the search backtracks (an undo log of the beliefs).
//!
//! Solutions can differ near the log's first entries (a create whose key
//! an identical write just before the log could have made). So, along the
//! first solution from the head down, each decision's other branch is
//! searched too: the first one that leads to a solution, or that the
//! search cannot refute (its budget spent, a step it does not follow),
//! ends what is decided, and the log is placed from the entry after it;
//! the entries before are counted, not placed. A first solution not found
//! within the budget, or an entry on its way this search does not follow
//! (a delete whose key's state is unknown, a lease revoke that may have
//! deleted keys, a put on a lease whose life it cannot tell, a compare it
//! cannot evaluate) leaves the log not placed, saying which. A generation begun before the
//! log and ended in it before the db's compaction has counters no file
//! holds: its writes are left out and counted ([`UNKNOWN_GENERATION`]).
//! The caller replays the log forward from the solution (its start
//! revision, each key's state then, each txn's branch) through the same
//! checks as a log from entry 1, so a solution that is wrong fails there.

use super::{digest, write_digest, Facts, KeyState, ValueDigest};
use crate::source::wal::{CompareTarget, DeleteRangeRequest, Entry, Op, PutRequest, Request, RequestOp};
use crate::source::Revision;
use std::collections::HashMap;

/// A key the log names: its index in [`Steps`]' keys.
type KeyIx = u32;

/// What one entry does to the key space, without values.
enum Step {
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

struct Cmp {
    key: KeyIx,
    target: Target,
    /// etcd's `Compare.result`: 0 equal, 1 greater, 2 less, 3 not equal.
    result: i32,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Target {
    Version(i64),
    Create(i64),
    Mod(i64),
    Lease(i64),
    Value(ValueDigest),
}

#[derive(Clone, Copy)]
enum Write {
    Put {
        key: KeyIx,
        value: ValueDigest,
        lease: i64,
    },
    Delete(KeyIx),
}

impl Write {
    fn key(&self) -> KeyIx {
        match *self {
            Write::Put { key, .. } | Write::Delete(key) => key,
        }
    }
}

/// The entries of a log from its first up to the db's consistent index,
/// as the search needs them: a few dozen bytes an entry.
pub struct Steps {
    first: u64,
    ids: HashMap<Vec<u8>, KeyIx>,
    keys: Vec<Vec<u8>>,
    steps: Vec<Step>,
    /// Where each lease was granted and revoked (step positions).
    granted: HashMap<i64, usize>,
    revoked: HashMap<i64, usize>,
    /// The first entry this search does not follow, and why.
    unsupported: Option<(u64, &'static str)>,
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
        }
    }

    /// Adds the next entry.
    pub fn push(&mut self, entry: &Entry) {
        let step = self.step(&entry.request).unwrap_or_else(|why| {
            self.unsupported.get_or_insert((entry.index, why));
            Step::Nothing
        });
        self.steps.push(step);
    }

    fn key(&mut self, key: &[u8]) -> KeyIx {
        if let Some(&ix) = self.ids.get(key) {
            return ix;
        }
        let ix = self.keys.len() as KeyIx;
        self.keys.push(key.to_vec());
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
                Step::Revoke(r.id)
            }
            _ => Step::Nothing,
        })
    }

    fn put(&mut self, p: &PutRequest) -> Result<Write, &'static str> {
        if p.ignore_value || p.ignore_lease {
            return Err("a put keeping the key's value or lease");
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

/// What is known of a key at some point.
#[derive(Clone, Debug, PartialEq)]
enum Belief {
    Absent,
    Live(Known),
    /// Live or absent, and what it is not.
    Unknown(Vec<Target>),
}

/// What is known of a live key.
#[derive(Clone, Debug, Default, PartialEq)]
struct Known {
    mod_revision: Option<Revision>,
    create_revision: Option<Revision>,
    version: Option<i64>,
    lease: Option<i64>,
    value: Option<ValueDigest>,
    /// Targets it does not equal (a compare on it failed).
    excluded: Vec<Target>,
}

impl Known {
    fn exact(s: &KeyState) -> Known {
        Known {
            mod_revision: Some(s.mod_revision),
            create_revision: Some(s.create_revision),
            version: Some(s.version),
            lease: Some(s.lease),
            value: Some(s.value),
            excluded: Vec::new(),
        }
    }

    /// Both known of one key at once, or `None` where they disagree.
    fn and(&self, other: &Known) -> Option<Known> {
        fn one<T: Copy + PartialEq>(a: Option<T>, b: Option<T>) -> Option<Option<T>> {
            match (a, b) {
                (Some(x), Some(y)) if x != y => None,
                _ => Some(a.or(b)),
            }
        }
        let mut excluded = self.excluded.clone();
        excluded.extend(other.excluded.iter().filter(|t| !self.excluded.contains(t)));
        Some(Known {
            mod_revision: one(self.mod_revision, other.mod_revision)?,
            create_revision: one(self.create_revision, other.create_revision)?,
            version: one(self.version, other.version)?,
            lease: one(self.lease, other.lease)?,
            value: one(self.value, other.value)?,
            excluded,
        })
    }
}

impl Belief {
    fn excluded(&self) -> &[Target] {
        match self {
            Belief::Absent => &[],
            Belief::Live(k) => &k.excluded,
            Belief::Unknown(e) => e,
        }
    }

    /// Itself, unless what it is contradicts what it is not.
    fn checked(self) -> Option<Belief> {
        let equal = |target| Cmp {
            key: 0,
            target,
            result: 0,
        };
        let contradicts = self
            .excluded()
            .iter()
            .any(|&t| self.holds(&equal(t)) == Some(true));
        (!contradicts).then_some(self)
    }

    /// Both at once, or `None` where they disagree.
    fn and(&self, other: &Belief) -> Option<Belief> {
        let both = match (self, other) {
            (Belief::Unknown(a), Belief::Unknown(b)) => {
                let mut e = a.clone();
                e.extend(b.iter().filter(|t| !a.contains(t)));
                Belief::Unknown(e)
            }
            (Belief::Unknown(e), Belief::Absent) | (Belief::Absent, Belief::Unknown(e)) => {
                let equal = |target| Cmp {
                    key: 0,
                    target,
                    result: 0,
                };
                if e.iter().any(|&t| Belief::Absent.holds(&equal(t)) == Some(true)) {
                    return None;
                }
                Belief::Absent
            }
            (Belief::Unknown(e), Belief::Live(k)) | (Belief::Live(k), Belief::Unknown(e)) => {
                let mut k = k.clone();
                let more: Vec<Target> = e.iter().filter(|t| !k.excluded.contains(t)).copied().collect();
                k.excluded.extend(more);
                Belief::Live(k)
            }
            (Belief::Absent, Belief::Absent) => Belief::Absent,
            (Belief::Live(a), Belief::Live(b)) => Belief::Live(a.and(b)?),
            _ => return None,
        };
        both.checked()
    }

    /// It, with `target` excluded.
    fn excluding(&self, target: Target) -> Option<Belief> {
        let not = match self {
            Belief::Absent => Belief::Unknown(vec![target]),
            Belief::Live(_) => Belief::Live(Known {
                excluded: vec![target],
                ..Known::default()
            }),
            Belief::Unknown(_) => Belief::Unknown(vec![target]),
        };
        self.and(&not)
    }

    /// Whether the compare holds: `None` when what is known cannot tell.
    fn holds(&self, c: &Cmp) -> Option<bool> {
        use std::cmp::Ordering;
        let excluded = self.excluded().contains(&c.target);
        match c.result {
            0 if excluded => return Some(false),
            3 if excluded => return Some(true),
            _ => {}
        }
        let ordering = |have: Option<i64>, want: i64| have.map(|h| h.cmp(&want));
        let ordering: Option<Ordering> = match (self, c.target) {
            (Belief::Unknown(_), _) => return None,
            (Belief::Absent, Target::Value(_)) => return Some(false),
            (Belief::Absent, Target::Version(v) | Target::Create(v) | Target::Mod(v) | Target::Lease(v)) => {
                Some(0.cmp(&v))
            }
            (Belief::Live(k), Target::Version(v)) => ordering(k.version, v),
            (Belief::Live(k), Target::Create(v)) => ordering(k.create_revision.map(|r| r.0), v),
            (Belief::Live(k), Target::Mod(v)) => ordering(k.mod_revision.map(|r| r.0), v),
            (Belief::Live(k), Target::Lease(v)) => ordering(k.lease, v),
            (Belief::Live(k), Target::Value(v)) => {
                let same = k.value.map(|have| have == v)?;
                return match c.result {
                    0 => Some(same),
                    3 => Some(!same),
                    _ => None,
                };
            }
        };
        let o = ordering?;
        Some(match c.result {
            0 => o == Ordering::Equal,
            1 => o == Ordering::Greater,
            2 => o == Ordering::Less,
            _ => o != Ordering::Equal,
        })
    }

    /// It, made to give `holds` for the compare, or `None` where it cannot.
    fn made(&self, c: &Cmp, holds: bool) -> Result<Option<Belief>, Refused> {
        let equal = match (c.result, holds) {
            (0, true) | (3, false) => true,
            (0, false) | (3, true) => false,
            _ => return Err(Refused::Cannot("an ordering compare it cannot evaluate")),
        };
        if !equal {
            return Ok(self.excluding(c.target));
        }
        let live = |k: Known| Belief::Live(k);
        let is = match c.target {
            Target::Mod(0) | Target::Version(0) | Target::Create(0) => Belief::Absent,
            Target::Mod(v) => live(Known {
                mod_revision: Some(Revision(v)),
                ..Known::default()
            }),
            Target::Version(v) => live(Known {
                version: Some(v),
                ..Known::default()
            }),
            Target::Create(v) => live(Known {
                create_revision: Some(Revision(v)),
                ..Known::default()
            }),
            Target::Lease(v) => live(Known {
                lease: Some(v),
                ..Known::default()
            }),
            Target::Value(v) => live(Known {
                value: Some(v),
                ..Known::default()
            }),
        };
        Ok(self.and(&is))
    }
}

/// The create revision of a generation begun before the log whose
/// counters no file holds: its writes are not given (see
/// [`Placer::apply`](super::Placer::apply)).
pub(super) const UNKNOWN_GENERATION: Revision = Revision(-1);

/// Where a log that starts after a raft snapshot starts.
#[derive(Debug)]
pub struct Start {
    /// The revision before its first entry's (its first write is the next).
    pub revision: Revision,
    /// Every key the log writes, as it was before the log: `None` absent.
    pub(super) keys: HashMap<Vec<u8>, Option<KeyState>>,
    /// The leases there before it.
    pub(super) leases: Vec<i64>,
    /// Each step's txn branch (`true`: its compares held).
    pub(super) branches: Vec<bool>,
    /// The first entry placed.
    pub first: u64,
    /// The entries before it, whose revisions the log cannot decide: the
    /// solutions that fit differ there.
    pub skipped: u64,
}

/// What `beliefs` say of `key`, or for a key they do not name, what the
/// db holds: at its head, or once the compaction was `crossed`, there.
fn belief(
    facts: &Facts,
    steps: &Steps,
    beliefs: &HashMap<KeyIx, Belief>,
    crossed: bool,
    key: KeyIx,
) -> Belief {
    if let Some(b) = beliefs.get(&key) {
        return b.clone();
    }
    let held = facts.keys.get(steps.keys[key as usize].as_slice());
    let state = match crossed {
        false => held.and_then(|h| h.head.clone()),
        true => held.and_then(|h| h.kept_state.clone()),
    };
    state.map_or(Belief::Absent, |s| Belief::Live(Known::exact(&s)))
}

/// How a lease stood at a step.
enum LeaseAt {
    Alive,
    Gone,
}

/// The steps the search may take before it gives up, per entry and over all.
const BUDGET_PER_STEP: usize = 20;
const BUDGET_BASE: usize = 100_000;

/// One decision on the search's path.
#[derive(Clone, Copy)]
struct Frame {
    /// The step undone.
    at: usize,
    /// The branch tried.
    branch: bool,
    /// Whether the other branch is still to try.
    other_left: bool,
    /// `R` before the step, the undo log's length and whether the
    /// compaction was crossed, to go back to.
    revision: Revision,
    undo: usize,
    crossed: bool,
}

struct Search<'a> {
    facts: &'a Facts,
    steps: &'a Steps,
    beliefs: HashMap<KeyIx, Belief>,
    undo: Vec<(KeyIx, Option<Belief>)>,
    crossed: bool,
}

/// Why an outcome cannot be taken: it contradicts what is known, or the
/// search cannot tell.
enum Refused {
    Contradiction,
    Cannot(&'static str),
}

impl<'a> Search<'a> {
    /// What is known of `key` right after the step being undone.
    fn belief(&self, key: KeyIx) -> Belief {
        belief(self.facts, self.steps, &self.beliefs, self.crossed, key)
    }

    fn set(&mut self, key: KeyIx, belief: Belief) {
        let old = self.beliefs.insert(key, belief);
        self.undo.push((key, old));
    }

    fn back_to(&mut self, len: usize) {
        while self.undo.len() > len {
            let (key, old) = self.undo.pop().expect("longer than len");
            match old {
                Some(b) => self.beliefs.insert(key, b),
                None => self.beliefs.remove(&key),
            };
        }
    }

    /// Crossing the db's compaction: every key believed is what the db
    /// kept there.
    fn cross(&mut self) -> Result<(), Refused> {
        self.crossed = true;
        let known: Vec<KeyIx> = self.beliefs.keys().copied().collect();
        for key in known {
            let held = self.facts.keys.get(self.steps.keys[key as usize].as_slice());
            let kept = held
                .and_then(|h| h.kept_state.as_ref())
                .map_or(Belief::Absent, |s| Belief::Live(Known::exact(s)));
            let both = self.beliefs[&key].and(&kept).ok_or(Refused::Contradiction)?;
            let both = match both {
                Belief::Live(mut k) => {
                    k.excluded.clear();
                    Belief::Live(k)
                }
                b => b,
            };
            self.set(key, both);
        }
        Ok(())
    }

    fn lease_at(&self, lease: i64, at: usize) -> Result<LeaseAt, Refused> {
        if lease == 0 {
            return Ok(LeaseAt::Alive);
        }
        let granted = self.steps.granted.get(&lease);
        let revoked = self.steps.revoked.get(&lease);
        Ok(match (granted, revoked) {
            (Some(&g), _) if g > at => LeaseAt::Gone,
            (_, Some(&r)) if r < at => LeaseAt::Gone,
            (Some(_), _) | (None, Some(_)) => LeaseAt::Alive,
            (None, None) if self.facts.leases.contains(&lease) => LeaseAt::Alive,
            (None, None) => {
                return Err(Refused::Cannot(
                    "a put on a lease granted before the log and gone by the db's head",
                ))
            }
        })
    }

    /// Undoes step `at` under `branch`, `r` being the revision it writes if
    /// it writes: the revision the step before it would write.
    fn undo_step(&mut self, at: usize, branch: bool, r: Revision) -> Result<Revision, Refused> {
        let (compares, success, failure) = match &self.steps.steps[at] {
            Step::Nothing => return Ok(r),
            Step::Revoke(lease) => {
                let granted = self.steps.granted.get(lease);
                let attached = self.steps.steps[granted.map_or(0, |g| g + 1)..at]
                    .iter()
                    .any(|s| match s {
                        Step::Txn { success, failure, .. } => success
                            .iter()
                            .chain(failure)
                            .any(|w| matches!(w, Write::Put { lease: l, .. } if l == lease)),
                        _ => false,
                    });
                return match (granted, attached) {
                    (Some(_), false) => Ok(r),
                    _ => Err(Refused::Cannot("a lease revoke that may have deleted keys")),
                };
            }
            Step::Txn {
                compares,
                success,
                failure,
            } => (compares, success, failure),
        };
        let writes = if branch { success } else { failure };
        let lives = writes
            .iter()
            .map(|w| match *w {
                Write::Put { lease, .. } => self.lease_at(lease, at),
                Write::Delete(_) => Ok(LeaseAt::Alive),
            })
            .collect::<Result<Vec<_>, _>>()?;
        // etcd refuses a branch putting on a lease it does not have: it
        // writes nothing.
        let writes: &[Write] = match lives.iter().any(|l| matches!(l, LeaseAt::Gone)) {
            true => &[],
            false => writes,
        };
        let mut before: Vec<(KeyIx, Belief)> = Vec::with_capacity(writes.len() + compares.len());
        let mut changed = Vec::new();
        for w in writes {
            let after = self.belief(w.key());
            match *w {
                Write::Put { key, value, lease } => {
                    let put = Known {
                        mod_revision: Some(r),
                        lease: Some(lease),
                        value: Some(value),
                        ..Known::default()
                    };
                    let Some(Belief::Live(after)) = after.and(&Belief::Live(put)) else {
                        return Err(Refused::Contradiction);
                    };
                    let pre = match (after.version, after.create_revision) {
                        (Some(1), Some(c)) if c != r => return Err(Refused::Contradiction),
                        (Some(1), _) => Belief::Absent,
                        (Some(v), c) if v > 1 => Belief::Live(Known {
                            version: Some(v - 1),
                            create_revision: c,
                            ..Known::default()
                        }),
                        (Some(_), _) => return Err(Refused::Contradiction),
                        (None, Some(c)) if c == r => Belief::Absent,
                        (None, Some(c)) => Belief::Live(Known {
                            create_revision: Some(c),
                            ..Known::default()
                        }),
                        (None, None) => Belief::Unknown(Vec::new()),
                    };
                    before.push((key, pre));
                    changed.push((key, Some(value)));
                }
                Write::Delete(key) => {
                    if matches!(after, Belief::Live(_)) {
                        return Err(Refused::Contradiction);
                    }
                    before.push((key, Belief::Unknown(Vec::new())));
                }
            }
        }
        // The compares, on the keys as they were before the step: on the
        // success branch each holds, on the failure one at least one fails.
        let mut failing = Vec::new();
        for (i, c) in compares.iter().enumerate() {
            let at_key = before.iter().position(|(k, _)| *k == c.key);
            let was = match at_key {
                Some(i) => before[i].1.clone(),
                None => self.belief(c.key),
            };
            let now = match (was.holds(c), branch) {
                (Some(h), true) if h => continue,
                (Some(_), true) => return Err(Refused::Contradiction),
                (Some(h), false) => {
                    if !h {
                        failing.push(None);
                    }
                    continue;
                }
                (None, true) => was.made(c, true)?.ok_or(Refused::Contradiction)?,
                (None, false) => {
                    failing.push(Some(i));
                    continue;
                }
            };
            match at_key {
                Some(i) => before[i].1 = now,
                None => before.push((c.key, now)),
            }
        }
        if !branch {
            match failing.as_slice() {
                [] => return Err(Refused::Contradiction),
                // One compare that may fail: it does.
                [Some(i)] => {
                    let c = &compares[*i];
                    let at_key = before.iter().position(|(k, _)| *k == c.key);
                    let was = at_key.map_or_else(|| self.belief(c.key), |i| before[i].1.clone());
                    let now = was.made(c, false)?.ok_or(Refused::Contradiction)?;
                    match at_key {
                        Some(i) => before[i].1 = now,
                        None => before.push((c.key, now)),
                    }
                }
                f if f.contains(&None) => {}
                _ => {
                    return Err(Refused::Cannot(
                        "a failed txn whose failing compare cannot be told",
                    ))
                }
            }
        }
        // A delete writes when its key was live.
        for w in writes {
            if let Write::Delete(key) = *w {
                let was = before.iter().find(|(k, _)| *k == key).map(|(_, b)| b.clone());
                match was {
                    Some(Belief::Live(_)) => changed.push((key, None)),
                    Some(Belief::Absent) => {}
                    _ => {
                        return Err(Refused::Cannot(
                            "a delete of a key whose state before it is unknown",
                        ))
                    }
                }
            }
        }
        let raised = !changed.is_empty();
        if raised && r.0 < 1 {
            return Err(Refused::Contradiction);
        }
        if raised && r > self.facts.compacted {
            let sum = changed.iter().fold(0u128, |sum, (key, value)| {
                sum.wrapping_add(write_digest(&self.steps.keys[*key as usize], *value))
            });
            if self.facts.whole.get(&r) != Some(&sum) {
                return Err(Refused::Contradiction);
            }
        }
        for (key, belief) in before {
            self.set(key, belief);
        }
        Ok(if raised { r.prev() } else { r })
    }
}

/// Where a log that starts after a raft snapshot starts, or why it is not
/// placed: the first solution the search finds, then, from the db's head
/// down, each decision on its path whose other branch is not refuted ends
/// what is decided (the log is placed from the entry after it).
pub fn place(facts: &Facts, steps: &Steps) -> Result<Start, String> {
    if let Some((index, why)) = steps.unsupported {
        return Err(format!(
            "entry {index} is {why}, which placing such a log does not follow yet"
        ));
    }
    let mut search = Search {
        facts,
        steps,
        beliefs: HashMap::new(),
        undo: Vec::new(),
        crossed: false,
    };
    let mut budget = BUDGET_BASE + BUDGET_PER_STEP * steps.steps.len();
    let n = steps.steps.len();
    let path = match search.first_solution(n, true, facts.revision, &mut budget) {
        Found::Solution(path) => path,
        Found::None => return Err("no start fits the log and the db".into()),
        Found::Spent => return Err("the search for where it starts ran out of steps".into()),
        Found::Cannot(at, why) => {
            return Err(format!(
                "entry {} is {why}, which placing such a log does not follow yet",
                steps.first + at as u64
            ))
        }
    };
    let mut branches = vec![true; n];
    for f in &path {
        branches[f.at] = f.branch;
    }
    // Along the solution from the head down: the first decision whose other
    // branch leads to a solution too (or cannot be refuted) is where the
    // solutions part.
    search.back_to(0);
    search.crossed = false;
    let mut r = facts.revision;
    let mut from = 0;
    for f in &path {
        if f.other_left {
            let (undo, crossed) = (search.undo.len(), search.crossed);
            let other = search.first_solution(f.at + 1, false, r, &mut budget);
            search.back_to(undo);
            search.crossed = crossed;
            if !matches!(other, Found::None) {
                from = f.at + 1;
                break;
            }
        }
        if !search.crossed && r <= facts.compacted {
            search
                .cross()
                .map_err(|_| "the search's solution does not hold again".to_string())?;
        }
        r = search
            .undo_step(f.at, f.branch, r)
            .map_err(|_| "the search's solution does not hold again".to_string())?;
    }
    if from == n {
        return Err("it can start in more than one way at every entry".into());
    }
    start(&search, steps, r, branches, from)
}

/// What a search from one step down found.
enum Found {
    /// The decisions of its first solution, from the step it began at down.
    Solution(Vec<Frame>),
    /// No solution.
    None,
    /// Its budget ran out.
    Spent,
    /// A step it does not follow, and why.
    Cannot(usize, &'static str),
}

impl Search<'_> {
    /// Searches depth first from the steps below `below` (the state being
    /// the one after step `below - 1`, `r` the revision it writes if it
    /// writes), the first taking `first_branch`, for one solution, within
    /// `budget` steps. It leaves the state where the solution left it.
    fn first_solution(
        &mut self,
        below: usize,
        first_branch: bool,
        mut r: Revision,
        budget: &mut usize,
    ) -> Found {
        let mut path: Vec<Frame> = Vec::new();
        let mut next_branch = first_branch;
        let at_of = |path: &[Frame]| below - path.len();
        loop {
            if *budget == 0 {
                return Found::Spent;
            }
            *budget -= 1;
            if at_of(&path) == 0 {
                return Found::Solution(path);
            }
            let at = at_of(&path) - 1;
            let (undo, crossed) = (self.undo.len(), self.crossed);
            let mut taken = Ok(r);
            if !self.crossed && r <= self.facts.compacted {
                taken = self.cross().map(|_| r);
            }
            let is_txn = matches!(self.steps.steps[at], Step::Txn { .. });
            match taken.and_then(|r| self.undo_step(at, next_branch, r)) {
                Ok(next) => {
                    path.push(Frame {
                        at,
                        branch: next_branch,
                        other_left: is_txn && next_branch,
                        revision: r,
                        undo,
                        crossed,
                    });
                    r = next;
                    next_branch = true;
                    continue;
                }
                Err(Refused::Cannot(why)) => return Found::Cannot(at, why),
                Err(Refused::Contradiction) => {
                    self.back_to(undo);
                    self.crossed = crossed;
                    if is_txn && next_branch {
                        next_branch = false;
                        continue;
                    }
                }
            }
            // Back to the newest decision with another branch left.
            loop {
                let Some(frame) = path.pop() else {
                    return Found::None;
                };
                self.back_to(frame.undo);
                self.crossed = frame.crossed;
                r = frame.revision;
                if frame.other_left {
                    next_branch = false;
                    break;
                }
            }
        }
    }
}

/// Where the log starts from step `from` on (the steps before it taken
/// back, `r` the revision before it), with the branches the search decided.
fn start(
    search: &Search<'_>,
    steps: &Steps,
    r: Revision,
    mut branches: Vec<bool>,
    from: usize,
) -> Result<Start, String> {
    let (facts, beliefs, crossed) = (search.facts, &search.beliefs, search.crossed);
    let mut written = vec![false; steps.keys.len()];
    for (at, step) in steps.steps.iter().enumerate().skip(from) {
        if let Step::Txn { success, failure, .. } = step {
            for w in if branches[at] { success } else { failure } {
                written[w.key() as usize] = true;
            }
        }
    }
    let unknown = KeyState {
        mod_revision: Revision(0),
        create_revision: UNKNOWN_GENERATION,
        version: i64::MIN / 2,
        lease: 0,
        value: ValueDigest::default(),
    };
    let mut keys = HashMap::new();
    for (ix, key) in steps.keys.iter().enumerate().filter(|(ix, _)| written[*ix]) {
        let state = match belief(facts, steps, beliefs, crossed, ix as KeyIx) {
            Belief::Absent => None,
            // A generation begun before the log whose counters no file
            // holds (created before it and deleted in it before the db's
            // compaction), or one whether live or not is unknown.
            Belief::Live(k) => match (k.version, k.create_revision) {
                (Some(version), Some(create_revision)) => Some(KeyState {
                    mod_revision: k.mod_revision.unwrap_or_default(),
                    create_revision,
                    version,
                    lease: k.lease.unwrap_or_default(),
                    value: k.value.unwrap_or_default(),
                }),
                _ => Some(unknown.clone()),
            },
            Belief::Unknown(_) => Some(unknown.clone()),
        };
        keys.insert(key.clone(), state);
    }
    let mut leases: Vec<i64> = facts.leases.clone();
    leases.extend(
        steps
            .revoked
            .iter()
            .filter(|(l, &at)| at >= from && !steps.granted.contains_key(l))
            .map(|(l, _)| *l),
    );
    leases.extend(steps.granted.iter().filter(|(_, &at)| at < from).map(|(l, _)| *l));
    leases.retain(|l| {
        steps.granted.get(l).is_none_or(|&at| at < from) && steps.revoked.get(l).is_none_or(|&at| at >= from)
    });
    leases.sort_unstable();
    leases.dedup();
    Ok(Start {
        revision: r,
        keys,
        leases,
        branches: branches.split_off(from),
        first: steps.first + from as u64,
        skipped: from as u64,
    })
}

#[cfg(test)]
mod tests {
    use super::super::Placer;
    use super::*;
    use crate::source::wal::{Compare, TxnRequest};
    use crate::source::Record;

    /// A small deterministic generator (xorshift).
    struct Rng(u64);

    impl Rng {
        fn below(&mut self, n: u64) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0 % n
        }
    }

    fn put_op(key: &str, value: &str) -> RequestOp {
        RequestOp {
            request: Some(Op::Put(PutRequest {
                key: key.as_bytes().to_vec(),
                value: value.as_bytes().to_vec(),
                ..PutRequest::default()
            })),
        }
    }

    fn delete_op(key: &str) -> RequestOp {
        RequestOp {
            request: Some(Op::DeleteRange(crate::source::wal::DeleteRangeRequest {
                key: key.as_bytes().to_vec(),
                ..Default::default()
            })),
        }
    }

    /// kube-apiserver's txn: `mod_revision == m`, then `op`, else a read.
    fn guarded(key: &str, m: i64, op: RequestOp) -> Request {
        let read = RequestOp {
            request: Some(Op::Range(crate::source::wal::RangeRequest {
                key: key.as_bytes().to_vec(),
                ..Default::default()
            })),
        };
        Request::Txn(TxnRequest {
            compare: vec![Compare {
                result: 0,
                target: 2,
                key: key.as_bytes().to_vec(),
                target_union: Some(CompareTarget::ModRevision(m)),
                range_end: Vec::new(),
            }],
            success: vec![op],
            failure: vec![read],
        })
    }

    /// A log of kube-apiserver's writes from entry 1, and what each entry
    /// wrote: creates (some of names that exist, which fail), updates and
    /// deletes on the revision read (one in six from a stale read, which
    /// fail), blind puts, and a lease granted and revoked with nothing on it.
    fn log(seed: u64, entries: usize) -> (Vec<Entry>, Vec<Vec<Record>>) {
        let mut rng = Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1);
        let mut placer = Placer::again();
        let mut live: HashMap<String, (i64, i64)> = HashMap::new(); // mod, the one before
        let (mut log, mut wrote) = (Vec::new(), Vec::new());
        let mut granted = None;
        for index in 1..=entries as u64 {
            let key = format!("/registry/configmaps/shop/cm-{}.properties", rng.below(14));
            let value = format!("v{index}");
            let request = match (live.get(&key).copied(), rng.below(12)) {
                (_, 0) => {
                    granted = Some(1000 + index as i64);
                    Request::LeaseGrant(crate::source::wal::LeaseGrantRequest {
                        ttl: 60,
                        id: 1000 + index as i64,
                    })
                }
                (_, 1) if granted.is_some() => Request::LeaseRevoke(crate::source::wal::LeaseRevokeRequest {
                    id: granted.take().expect("granted"),
                }),
                (_, 2) => Request::Put(PutRequest {
                    key: key.as_bytes().to_vec(),
                    value: value.into_bytes(),
                    ..PutRequest::default()
                }),
                (None, _) => guarded(&key, 0, put_op(&key, &value)),
                (Some(_), 3) => guarded(&key, 0, put_op(&key, &value)),
                (Some((_, before)), 4) if before > 0 => guarded(&key, before, put_op(&key, &value)),
                (Some((m, _)), 5) => guarded(&key, m, delete_op(&key)),
                (Some((m, _)), _) => guarded(&key, m, put_op(&key, &value)),
            };
            let entry = Entry {
                index,
                term: 2,
                request,
                committed: true,
            };
            let writes = placer.apply(&entry).unwrap();
            for w in &writes {
                let k = String::from_utf8(w.key.clone()).unwrap();
                match w.deleted {
                    true => live.remove(&k),
                    false => {
                        let before = live.get(&k).map_or(0, |l| l.0);
                        live.insert(k, (w.mod_revision.0, before))
                    }
                };
            }
            log.push(entry);
            wrote.push(writes);
        }
        (log, wrote)
    }

    /// What a db compacted at `compacted` holds of the writes.
    fn db(wrote: &[Vec<Record>], compacted: i64) -> Facts {
        let head = wrote
            .iter()
            .flatten()
            .map(|w| w.mod_revision)
            .max()
            .unwrap_or_default();
        let mut facts = Facts::new(head, Revision(compacted));
        let mut newest: HashMap<&[u8], &Record> = HashMap::new();
        for w in wrote.iter().flatten() {
            match w.mod_revision.0 > compacted {
                true => facts.add(w),
                false => {
                    newest.insert(&w.key, w);
                }
            }
        }
        for w in newest.values().filter(|w| !w.deleted) {
            facts.add(w);
        }
        facts
    }

    /// Places the log from entry `cut` on: what it writes, entry by entry,
    /// and how many writes it left out for their counters; or why not.
    fn placed(log: &[Entry], facts: &Facts, cut: usize) -> Result<(Vec<Vec<Record>>, u64, usize), String> {
        let mut steps = Steps::new(log[cut].index);
        for e in &log[cut..] {
            steps.push(e);
        }
        let start = place(facts, &steps)?;
        let mut placer = Placer::purged(facts, &start);
        let skipped = start.skipped as usize;
        let wrote = log[cut + skipped..]
            .iter()
            .map(|e| placer.apply(e))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| e.to_string())?;
        placer.finish().map_err(|e| e.to_string())?;
        Ok((wrote, placer.counters_unknown(), skipped))
    }

    /// The truth as the placed log can give it: the writes of generations
    /// whose counters it cannot know left out, their deletes naming none.
    fn knowable(truth: &[Vec<Record>], got: &[Vec<Record>]) -> (Vec<Vec<Record>>, u64) {
        let given: std::collections::HashSet<(&[u8], Revision)> = got
            .iter()
            .flatten()
            .map(|w| (w.key.as_slice(), w.mod_revision))
            .collect();
        let mut left = 0;
        let kept = truth
            .iter()
            .map(|writes| {
                let mut writes = writes.clone();
                writes.retain(|w| {
                    let keep = given.contains(&(w.key.as_slice(), w.mod_revision));
                    left += u64::from(!keep);
                    keep
                });
                writes
            })
            .collect();
        (kept, left)
    }

    #[test]
    fn a_log_cut_anywhere_is_placed_exactly_or_not_at_all() {
        let (mut exact, mut refused, mut unknown_total, mut skipped_total) = (0, Vec::new(), 0, 0);
        for seed in 1..=30 {
            let (log, wrote) = log(seed, 900);
            let head = wrote.iter().flatten().map(|w| w.mod_revision.0).max().unwrap();
            for (cut, compacted) in [(50, head - 300), (300, head - 100), (600, head / 2), (100, 0)] {
                let facts = db(&wrote, compacted.max(0));
                match placed(&log, &facts, cut) {
                    Ok((got, unknown, skipped)) => {
                        let (mut truth, left) = knowable(&wrote[cut + skipped..], &got);
                        skipped_total += skipped;
                        assert_eq!(
                            left, unknown,
                            "seed {seed}, cut {cut}: only what it says it left out"
                        );
                        for w in truth.iter_mut().flatten() {
                            if w.deleted
                                && got.iter().flatten().any(|g| {
                                    g.key == w.key
                                        && g.mod_revision == w.mod_revision
                                        && g.create_revision.0 == 0
                                })
                            {
                                w.create_revision = Revision(0);
                            }
                        }
                        assert_eq!(got, truth, "seed {seed}, cut {cut}, compacted {compacted}");
                        exact += 1;
                        unknown_total += unknown;
                    }
                    Err(why) => refused.push(format!("seed {seed} cut {cut}: {why}")),
                }
            }
        }
        eprintln!(
            "placed {exact} of 120, {skipped_total} entries skipped at the start, {unknown_total} writes left out; \
             refused: {refused:#?}"
        );
        // Refused: the inherent ambiguity of where such a log starts beyond
        // what this search tells apart, and leases granted before the cut
        // revoked after it.
        assert!(exact >= 90, "placed {exact} of 120; refused: {refused:#?}");
    }
}
