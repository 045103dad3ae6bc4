//! Which revision each WAL entry wrote. The WAL holds requests, not
//! revisions: a revision is given as etcd applies entries in index order.
//! A put, a delete that removes a key, and a txn whose chosen branch writes
//! each raise the revision by one; a txn whose compares fail writes nothing
//! (`server/etcdserver/apply`, `server/storage/mvcc`).
//!
//! The state the log starts from is unknown, so the revisions are found
//! backwards from the db, whose consistent index says which entry it
//! applied last and whose keys give the state after it: every key's
//! newest `mod_revision`, and every revision since its compaction whole.
//! Revisions are dense, so walking entries backwards the next revision to
//! place is known, and each entry either wrote it or wrote nothing:
//! - kube-apiserver writes each key with `If(mod_revision(key) == X)
//!   Then(put or delete) [Else(get)]`: a success leaves the key at the
//!   revision placed with the value written, and before it the key was at
//!   revision X (absent for X = 0); a failure leaves the key as it was, not
//!   at X. Of two entries comparing one key to the same X ≠ 0, only the
//!   first can succeed (a revision, once replaced, never comes back).
//! - A revision after the db's compaction is known whole: the entry wrote
//!   it exactly when it wrote those keys and values.
//! - Where both are possible (a delete of a key no later write shows, a
//!   lease revoke), both are followed as hypotheses; later (earlier in the
//!   log) entries prune the ones that contradict what they show. An entry
//!   all surviving hypotheses place alike has its revision; others get the
//!   interval the hypotheses give ([`Placed::Between`], [`Placed::Maybe`]),
//!   never a guess.
//! - Requests outside these shapes (range deletes, nested txns, txns with
//!   several compares or writes) stop the walk: the history begins after
//!   them, and [`Assigned::stopped`] says where and why.

use super::{CompareTarget, Entry, Op, Request, TxnRequest};
use crate::source::Record;
use sha2::{Digest, Sha256};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::rc::Rc;

/// The most hypotheses followed at once before the walk stops.
const MAX_HYPOTHESES: usize = 256;

/// A value's identity: the first 16 bytes of its SHA-256.
pub type ValueDigest = [u8; 16];

/// The digest of a value.
pub fn digest(value: &[u8]) -> ValueDigest {
    let full = Sha256::digest(value);
    let mut d = [0u8; 16];
    d.copy_from_slice(&full[..16]);
    d
}

/// A live key as the db holds it at the anchor.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Live {
    pub mod_revision: i64,
    pub create_revision: i64,
    pub version: i64,
    pub digest: ValueDigest,
}

/// One revision the db still holds whole: each key it wrote, with the
/// value's digest, `None` for a delete.
pub type Written = Vec<(Vec<u8>, Option<ValueDigest>)>;

/// What the db says at the entry it applied last.
#[derive(Debug, Default)]
pub struct Anchor {
    /// The revision after that entry.
    pub revision: i64,
    /// Its compaction: revisions above it are in `history`.
    pub compacted: i64,
    /// Every live key.
    pub live: HashMap<Vec<u8>, Live>,
    /// Every revision above `compacted`.
    pub history: BTreeMap<i64, Written>,
    /// The writes at or below `compacted` the db still holds: each key's
    /// newest write at the compaction, later replaced or not.
    pub kept: HashMap<i64, Written>,
    /// `live`'s keys by `mod_revision` ([`Anchor::index`] fills it).
    by_mod: HashMap<i64, Vec<u8>>,
}

impl Anchor {
    /// An anchor at `revision`, compacted at `compacted`, to fill with
    /// [`Anchor::add`].
    pub fn new(revision: i64, compacted: i64) -> Anchor {
        Anchor {
            revision,
            compacted,
            ..Anchor::default()
        }
    }

    /// Adds one record the db holds; records come in revision order.
    pub fn add(&mut self, r: &Record) {
        let value = (!r.deleted).then(|| digest(&r.value));
        let written = match r.mod_revision > self.compacted {
            true => self.history.entry(r.mod_revision).or_default(),
            false => self.kept.entry(r.mod_revision).or_default(),
        };
        written.push((r.key.clone(), value));
        if r.deleted {
            self.live.remove(&r.key);
        } else {
            let live = Live {
                mod_revision: r.mod_revision,
                create_revision: r.create_revision,
                version: r.version,
                digest: digest(&r.value),
            };
            self.live.insert(r.key.clone(), live);
        }
    }

    /// Indexes the live keys by revision; call once `live` is filled.
    pub fn index(&mut self) {
        self.by_mod = self
            .live
            .iter()
            .map(|(k, l)| (l.mod_revision, k.clone()))
            .collect();
    }
}

/// Where an entry's write landed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Placed {
    /// It wrote nothing.
    Nothing,
    /// It wrote this revision.
    At(i64),
    /// It wrote one revision in this interval.
    Between(i64, i64),
    /// It may have written nothing, or one revision in this interval.
    Maybe(i64, i64),
}

/// The outcome of a walk.
#[derive(Debug)]
pub struct Assigned {
    /// Each entry walked (index order, from the oldest reached) and where
    /// it wrote.
    pub placed: Vec<(u64, Placed)>,
    /// The entry the walk stopped at, and why, when it did not reach the
    /// log's start.
    pub stopped: Option<(u64, String)>,
}

/// A key's state in one hypothesis.
#[derive(Clone, Debug, PartialEq, Eq)]
enum State {
    Absent,
    Present {
        mod_revision: Option<i64>,
        version: Option<i64>,
        digest: Option<ValueDigest>,
    },
    /// Unknown: a plain put's previous state.
    Unknown,
}

/// A key that was there, nothing more known.
const EXISTED: State = State::Present {
    mod_revision: None,
    version: None,
    digest: None,
};

/// A write an entry may do.
#[derive(Clone, Debug)]
enum Write {
    Put(ValueDigest),
    Delete,
}

/// An entry reduced to what placing it needs.
#[derive(Debug)]
enum Step {
    /// Changes no key.
    Nothing,
    /// A plain put or single-key delete: it writes if it can.
    Plain { key: Vec<u8>, write: Write },
    /// `If(target(key) == value) Then(write)`, the else branch reading.
    Guarded {
        key: Vec<u8>,
        target: Target,
        value: i64,
        write: Write,
        /// An earlier entry compares this key's mod_revision to the same
        /// value: this one cannot succeed.
        repeats: bool,
    },
    /// A lease revoke: deletes the keys attached to it in the log, and
    /// when it was granted before the log began, maybe others.
    Revoke {
        keys: Vec<Vec<u8>>,
        granted_before: bool,
    },
    /// A shape this walk does not follow.
    Unsupported(String),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Target {
    Mod,
    Version,
}

/// One hypothesis: the next revision to place, the keys it changed from
/// the anchor, and its placements (newest first, shared between forks).
#[derive(Clone)]
struct Hypothesis {
    next: i64,
    keys: HashMap<Vec<u8>, State>,
    /// The keys of `keys` at a known revision, by that revision.
    mods: HashMap<i64, Vec<u8>>,
    /// The next revision was written before the log began: no entry
    /// from here back writes.
    frozen: bool,
    placed: Option<Rc<Node>>,
}

impl Hypothesis {
    fn set(&mut self, key: &[u8], s: State) {
        if let Some(State::Present {
            mod_revision: Some(m),
            ..
        }) = self.keys.get(key)
        {
            if self.mods.get(m).is_some_and(|k| k == key) {
                self.mods.remove(m);
            }
        }
        if let State::Present {
            mod_revision: Some(m),
            ..
        } = &s
        {
            self.mods.insert(*m, key.to_vec());
        }
        self.keys.insert(key.to_vec(), s);
    }

    /// The key known to be at revision `r`: written there by an entry not
    /// yet placed, so no other key's write can be.
    fn owner<'a>(&'a self, anchor: &'a Anchor, r: i64) -> Option<&'a [u8]> {
        if let Some(k) = self.mods.get(&r) {
            return Some(k);
        }
        let kept = anchor.kept.get(&r).into_iter().flatten();
        if let Some((k, _)) = kept.into_iter().find(|(_, d)| d.is_some()) {
            return Some(k.as_slice());
        }
        let k = anchor.by_mod.get(&r)?;
        (!self.keys.contains_key(k)).then_some(k.as_slice())
    }
}

struct Node {
    step: usize,
    revision: Option<i64>,
    older: Option<Rc<Node>>,
}

/// Places the writes of `entries` (index order, up to the one the db
/// applied last) backwards from `anchor`. Holds each entry's keys and
/// value digests, not its values.
pub fn assign(entries: impl IntoIterator<Item = Entry>, anchor: &Anchor) -> Assigned {
    let (indexes, steps) = steps(entries);
    let writers = writers(&steps);
    let mut beam = vec![Hypothesis {
        next: anchor.revision,
        keys: HashMap::new(),
        mods: HashMap::new(),
        frozen: false,
        placed: None,
    }];
    let pre_log = pre_log(anchor, &indexes);
    let mut stopped = None;
    let mut reached = steps.len();
    for (i, step) in steps.iter().enumerate().rev() {
        if let Step::Unsupported(why) = step {
            stopped = Some((indexes[i], why.clone()));
            break;
        }
        let mut next = Vec::new();
        for h in &beam {
            for (revision, h) in place(step, i, h, anchor, &writers, pre_log) {
                let mut h = h;
                h.placed = Some(Rc::new(Node {
                    step: i,
                    revision,
                    older: h.placed.take(),
                }));
                next.push(h);
            }
        }
        if next.is_empty() {
            stopped = Some((
                indexes[i],
                "no placement of this entry agrees with the db and the later entries".into(),
            ));
            break;
        }
        if next.len() > MAX_HYPOTHESES {
            stopped = Some((
                indexes[i],
                format!("more than {MAX_HYPOTHESES} placements remain possible"),
            ));
            break;
        }
        beam = next;
        reached = i;
    }
    if stopped.is_none() {
        // At the log's start every key's newest write is older than the
        // first revision the log placed.
        let before = |h: &Hypothesis| {
            let known = |s: &State| match s {
                State::Present { mod_revision, .. } => mod_revision.is_none_or(|m| m <= h.next),
                _ => true,
            };
            // Each key there before the log took a revision of its own,
            // above revision 1.
            let present = h
                .keys
                .values()
                .filter(|s| matches!(s, State::Present { .. }))
                .count()
                + anchor.live.keys().filter(|k| !h.keys.contains_key(*k)).count();
            pre_log.is_none_or(|r| h.next <= r)
                && (present as i64) < h.next
                && h.keys.values().all(known)
                && anchor
                    .live
                    .iter()
                    .all(|(k, l)| h.keys.contains_key(k) || l.mod_revision <= h.next)
        };
        let fitting: Vec<Hypothesis> = beam.iter().filter(|h| before(h)).cloned().collect();
        if fitting.is_empty() {
            stopped = Some((
                indexes.first().copied().unwrap_or(0),
                "no placement leaves the keys as they were before the log".into(),
            ));
        } else {
            beam = fitting;
        }
    }
    Assigned {
        placed: placements(&beam, reached, &indexes),
        stopped,
    }
}

/// The highest revision the store can have had before the log's first
/// entry, `None` when nothing bounds it. etcd is at revision 1 before
/// entry 1 and an entry raises the revision by one at most, so before
/// entry `s` it is at most `s`: a log that starts at entry 1 starts from
/// an empty store, and one that starts later can have begun under no
/// higher revision, which bounds how far back its entries can all have
/// written nothing. A member restored from a
/// snapshot (`etcdutl snapshot restore`) starts a new log under an old
/// revision; where the db's revision is above its last entry's index
/// that is plain, and nothing is bounded.
fn pre_log(anchor: &Anchor, indexes: &[u64]) -> Option<i64> {
    let (first, last) = (*indexes.first()? as i64, *indexes.last()? as i64);
    (anchor.revision <= last + 1).then_some(first)
}

/// What the surviving hypotheses agree on, per entry from `reached` on.
fn placements(beam: &[Hypothesis], reached: usize, indexes: &[u64]) -> Vec<(u64, Placed)> {
    let mut seen: Vec<Vec<Option<i64>>> = vec![Vec::new(); indexes.len() - reached];
    for h in beam {
        let mut node = h.placed.clone();
        while let Some(n) = node {
            seen[n.step - reached].push(n.revision);
            node = n.older.clone();
        }
    }
    seen.into_iter()
        .enumerate()
        .map(|(i, revisions)| {
            let written: Vec<i64> = revisions.iter().flatten().copied().collect();
            let placed = match (written.iter().min(), written.iter().max()) {
                (None, _) | (_, None) => Placed::Nothing,
                (Some(&lo), Some(&hi)) if written.len() < revisions.len() => Placed::Maybe(lo, hi),
                (Some(&lo), Some(&hi)) if lo == hi => Placed::At(lo),
                (Some(&lo), Some(&hi)) => Placed::Between(lo, hi),
            };
            (indexes[reached + i], placed)
        })
        .collect()
}

/// The hypotheses `step` leaves from `h`, each with the revision the step
/// wrote in it.
fn place(
    step: &Step,
    i: usize,
    h: &Hypothesis,
    anchor: &Anchor,
    writers: &Writers,
    pre_log: Option<i64>,
) -> Vec<(Option<i64>, Hypothesis)> {
    let mut out = Vec::new();
    match step {
        Step::Nothing | Step::Unsupported(_) => out.push((None, h.clone())),
        Step::Plain { key, write } => {
            if let Some(h) = wrote(h, anchor, key, write, Before::Unknown) {
                out.push((Some(h.next + 1), h));
            }
            if matches!(write, Write::Delete) && state(h, anchor, key) == State::Absent {
                // A delete of nothing writes nothing.
                out.push((None, h.clone()));
            }
        }
        Step::Guarded {
            key,
            target,
            value,
            write,
            repeats,
        } => {
            let before = match (target, *value) {
                (Target::Mod, 0) | (Target::Version, 0) => Before::Absent,
                (Target::Mod, x) => Before::At(x),
                (Target::Version, v) => Before::Version(v),
            };
            if !repeats {
                if let Some(h) = wrote(h, anchor, key, write, before) {
                    out.push((Some(h.next + 1), h));
                }
            }
            let after = state(h, anchor, key);
            if !holds(&after, *target, *value) {
                // Failed, though the key is at the revision to place next:
                // an earlier entry wrote it (the same value, when known),
                // or it was written before the log began.
                let (at_next, digest, version) = match after {
                    State::Present {
                        mod_revision,
                        digest,
                        version,
                    } => (
                        mod_revision.map_or(h.owner(anchor, h.next) == Some(key), |m| m == h.next),
                        digest,
                        version,
                    ),
                    _ => (false, None, None),
                };
                if !at_next || writers.before(key, i, digest, version) {
                    out.push((None, h.clone()));
                } else if pre_log.is_none_or(|r| h.next <= r) {
                    let mut h = h.clone();
                    h.frozen = true;
                    out.push((None, h));
                }
            }
        }
        Step::Revoke { keys, granted_before } => {
            // Nothing attached was left: no revision.
            out.push((None, h.clone()));
            if *granted_before && !h.frozen {
                // Keys attached before the log began, which it cannot name.
                let nothing_kept = Written::new();
                let held = match h.next <= anchor.compacted {
                    true => anchor.kept.get(&h.next).or(Some(&nothing_kept)),
                    false => anchor.history.get(&h.next),
                };
                let deleted = match held {
                    Some(held) if held.iter().all(|(_, d)| d.is_none()) => {
                        Some(held.iter().map(|(k, _)| k.clone()).collect::<Vec<_>>())
                    }
                    _ => None,
                };
                if let Some(deleted) = deleted.filter(|_| h.owner(anchor, h.next).is_none()) {
                    let mut h = h.clone();
                    for k in deleted {
                        h.set(&k, EXISTED);
                    }
                    h.next -= 1;
                    out.push((Some(h.next + 1), h));
                }
            }
            // Or every attached key absent after it was deleted by it.
            let gone: Vec<&Vec<u8>> = keys
                .iter()
                .filter(|k| state(h, anchor, k) == State::Absent)
                .collect();
            if !gone.is_empty()
                && !h.frozen
                && h.owner(anchor, h.next).is_none()
                && whole_matches(anchor, h.next, gone.iter().map(|k| (k.as_slice(), None)))
            {
                let mut h = h.clone();
                for k in gone {
                    h.set(k, EXISTED);
                }
                h.next -= 1;
                out.push((Some(h.next + 1), h));
            }
        }
    }
    out
}

/// What a guarded write says the key was before it.
#[derive(Clone, Copy)]
enum Before {
    Absent,
    At(i64),
    Version(i64),
    Unknown,
}

/// `h` with `write` to `key` placed at `h.next`, if the state after it
/// and the db allow: the key as it was before it, the next revision one
/// lower.
fn wrote(h: &Hypothesis, anchor: &Anchor, key: &[u8], write: &Write, before: Before) -> Option<Hypothesis> {
    if h.frozen {
        return None;
    }
    let r = h.next;
    let after = state(h, anchor, key);
    let fits = match (write, &after) {
        (
            Write::Put(d),
            State::Present {
                mod_revision, digest, ..
            },
        ) => mod_revision.is_none_or(|m| m == r) && digest.is_none_or(|x| x == *d),
        (Write::Put(_), State::Unknown) => true,
        (Write::Put(_), State::Absent) => false,
        (Write::Delete, State::Absent | State::Unknown) => true,
        (Write::Delete, State::Present { .. }) => false,
    };
    let value = match write {
        Write::Put(d) => Some(*d),
        Write::Delete => None,
    };
    if !fits
        || !whole_matches(anchor, r, std::iter::once((key, value)))
        || h.owner(anchor, r).is_some_and(|o| o != key)
    {
        return None;
    }
    let version_after = match &after {
        State::Present { version, .. } => *version,
        _ => None,
    };
    let prior = match before {
        Before::Absent => State::Absent,
        Before::At(x) => State::Present {
            mod_revision: Some(x),
            version: version_after.map(|v| v - 1),
            digest: None,
        },
        Before::Version(v) => {
            if version_after.is_some_and(|after| after != v + 1) {
                return None;
            }
            State::Present {
                mod_revision: None,
                version: Some(v),
                digest: None,
            }
        }
        // A plain delete that wrote found the key; a plain put may not have.
        Before::Unknown => match write {
            Write::Delete => EXISTED,
            Write::Put(_) => State::Unknown,
        },
    };
    let mut h = h.clone();
    h.set(key, prior);
    h.next -= 1;
    Some(h)
}

/// Whether revision `r`, if the db holds it whole, is exactly `writes`.
fn whole_matches<'a>(
    anchor: &Anchor,
    r: i64,
    writes: impl Iterator<Item = (&'a [u8], Option<ValueDigest>)>,
) -> bool {
    if r <= anchor.compacted {
        // What the db kept of it was written there.
        let kept = anchor.kept.get(&r).map_or(&[][..], |w| w.as_slice());
        let writes: Vec<(&[u8], Option<ValueDigest>)> = writes.collect();
        return kept.iter().all(|(k, d)| writes.contains(&(k.as_slice(), *d)));
    }
    let Some(held) = anchor.history.get(&r) else {
        return false;
    };
    let mut wanted: Vec<(&[u8], Option<ValueDigest>)> = writes.collect();
    let mut held: Vec<(&[u8], Option<ValueDigest>)> = held.iter().map(|(k, d)| (k.as_slice(), *d)).collect();
    wanted.sort();
    held.sort();
    wanted == held
}

/// Whether `target(key) == value` holds in state `s`; unknown counts as
/// possibly not.
fn holds(s: &State, target: Target, value: i64) -> bool {
    match (s, target) {
        (State::Absent, _) => value == 0,
        (State::Present { mod_revision, .. }, Target::Mod) => *mod_revision == Some(value),
        (State::Present { version, .. }, Target::Version) => *version == Some(value),
        (State::Unknown, _) => false,
    }
}

/// A key's state in `h`.
fn state(h: &Hypothesis, anchor: &Anchor, key: &[u8]) -> State {
    if let Some(s) = h.keys.get(key) {
        return match s {
            // A revision the db holds says what was written there.
            State::Present {
                mod_revision: Some(m),
                version,
                digest: None,
            } => State::Present {
                mod_revision: Some(*m),
                version: *version,
                digest: anchor
                    .history
                    .get(m)
                    .or(anchor.kept.get(m))
                    .and_then(|w| w.iter().find(|(k, _)| k == key))
                    .and_then(|(_, d)| *d),
            },
            s => s.clone(),
        };
    }
    match anchor.live.get(key) {
        Some(l) => State::Present {
            mod_revision: Some(l.mod_revision),
            version: Some(l.version),
            digest: Some(l.digest),
        },
        None => State::Absent,
    }
}

/// One step that may write a key: its position, the value it puts
/// (`None` for a delete), and the key's version after it when the step
/// says (a create leaves 1, `If(version == v)` leaves v + 1).
type Writer = (usize, Option<ValueDigest>, Option<i64>);

/// Each key's writing steps, in order.
struct Writers(HashMap<Vec<u8>, Vec<Writer>>);

impl Writers {
    /// Whether a step before `i` may have left `key` with `value` and
    /// `version`, each when known.
    fn before(&self, key: &[u8], i: usize, value: Option<ValueDigest>, version: Option<i64>) -> bool {
        self.0.get(key).is_some_and(|w| {
            w.iter().take_while(|(j, ..)| *j < i).any(|(_, d, v)| {
                (value.is_none() || *d == value) && (version.is_none() || v.is_none() || *v == version)
            })
        })
    }
}

fn writers(steps: &[Step]) -> Writers {
    let mut writers: HashMap<Vec<u8>, Vec<Writer>> = HashMap::new();
    for (i, step) in steps.iter().enumerate() {
        let (key, write, version) = match step {
            Step::Plain { key, write } => (key, write, None),
            Step::Guarded {
                key,
                write,
                target,
                value,
                ..
            } => {
                let version = match (target, write) {
                    (_, Write::Delete) => None,
                    (Target::Mod, _) if *value == 0 => Some(1),
                    (Target::Version, _) => Some(value + 1),
                    (Target::Mod, _) => None,
                };
                (key, write, version)
            }
            _ => continue,
        };
        let value = match write {
            Write::Put(d) => Some(*d),
            Write::Delete => None,
        };
        writers.entry(key.clone()).or_default().push((i, value, version));
    }
    Writers(writers)
}

/// Each entry's index and [`Step`], in index order.
fn steps(entries: impl IntoIterator<Item = Entry>) -> (Vec<u64>, Vec<Step>) {
    let mut compared: HashSet<(Vec<u8>, i64)> = HashSet::new();
    let mut granted: HashSet<i64> = HashSet::new();
    let mut leased: HashMap<i64, Vec<Vec<u8>>> = HashMap::new();
    let attach = |leased: &mut HashMap<i64, Vec<Vec<u8>>>, key: &[u8], lease: i64| {
        if lease != 0 {
            let keys = leased.entry(lease).or_default();
            if !keys.iter().any(|k| k == key) {
                keys.push(key.to_vec());
            }
        }
    };
    let (mut indexes, mut steps) = (Vec::new(), Vec::new());
    for e in entries {
        indexes.push(e.index);
        let step = match &e.request {
            Request::Put(p) => {
                attach(&mut leased, &p.key, p.lease);
                plain_put(p)
            }
            Request::DeleteRange(d) if d.range_end.is_empty() => Step::Plain {
                key: d.key.clone(),
                write: Write::Delete,
            },
            Request::DeleteRange(_) => Step::Unsupported("a delete of a key range".into()),
            Request::Txn(t) => {
                let step = guarded(t);
                if let Step::Guarded {
                    key,
                    target: Target::Mod,
                    value,
                    repeats,
                    write,
                } = step
                {
                    let repeats = repeats || (value != 0 && !compared.insert((key.clone(), value)));
                    if let (Write::Put(_), Some(Op::Put(p))) =
                        (&write, t.success.first().and_then(|o| o.request.as_ref()))
                    {
                        attach(&mut leased, &p.key, p.lease);
                    }
                    Step::Guarded {
                        key,
                        target: Target::Mod,
                        value,
                        write,
                        repeats,
                    }
                } else {
                    step
                }
            }
            Request::LeaseGrant(g) => {
                granted.insert(g.id);
                Step::Nothing
            }
            Request::LeaseRevoke(r) => Step::Revoke {
                keys: leased.remove(&r.id).unwrap_or_default(),
                granted_before: !granted.contains(&r.id),
            },
            _ => Step::Nothing,
        };
        steps.push(step);
    }
    (indexes, steps)
}

fn plain_put(p: &super::PutRequest) -> Step {
    if p.ignore_value {
        return Step::Unsupported("a put keeping the key's value (ignore_value)".into());
    }
    Step::Plain {
        key: p.key.clone(),
        write: Write::Put(digest(&p.value)),
    }
}

/// A txn of kube-apiserver's shape as a [`Step`].
fn guarded(t: &TxnRequest) -> Step {
    let [c] = t.compare.as_slice() else {
        return Step::Unsupported(format!("a txn with {} compares", t.compare.len()));
    };
    let (target, value) = match (c.result, &c.target_union) {
        (0, Some(CompareTarget::ModRevision(x))) => (Target::Mod, *x),
        (0, Some(CompareTarget::Version(v))) => (Target::Version, *v),
        _ => {
            return Step::Unsupported(
                "a txn comparing other than mod_revision or version for equality".into(),
            )
        }
    };
    let reads_only = t
        .failure
        .iter()
        .all(|o| matches!(o.request, Some(Op::Range(_)) | None));
    let write = match t.success.as_slice() {
        [op] => match &op.request {
            Some(Op::Put(p)) if p.key == c.key && !p.ignore_value => Write::Put(digest(&p.value)),
            Some(Op::DeleteRange(d)) if d.key == c.key && d.range_end.is_empty() => Write::Delete,
            _ => return Step::Unsupported("a txn writing other than the key it compares".into()),
        },
        _ => return Step::Unsupported(format!("a txn with {} writes", t.success.len())),
    };
    if !reads_only {
        return Step::Unsupported("a txn whose else branch writes".into());
    }
    Step::Guarded {
        key: c.key.clone(),
        target,
        value,
        write,
        repeats: false,
    }
}
