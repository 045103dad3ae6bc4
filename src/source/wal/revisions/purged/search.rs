//! The search backward from the db's head: each step undone under each
//! branch that fits what is known right after it, with an undo log of the
//! beliefs to backtrack through.

use super::super::write_digest;
use super::super::Facts;
use super::belief::{Belief, Known, Refused};
use super::steps::{Cmp, KeyIx, Step, Steps, Target, Write};
use crate::source::Revision;
use std::collections::HashMap;

/// How a lease stood at a step.
enum LeaseAt {
    Alive,
    Gone,
}

/// The steps the search may take before it gives up, per entry and over all.
pub(super) const BUDGET_PER_STEP: usize = 100;
pub(super) const BUDGET_BASE: usize = 100_000;

/// The id of a key the db kept that the log does not name.
const NOT_IN_LOG: KeyIx = KeyIx::MAX;

/// The steps naming a key that [`Search::could_be_left`] looks back at.
const LOOKAHEAD: usize = 16;

/// The revision a compare holds a key's mod or create revision equal to.
fn named_equal(c: &Cmp) -> Option<i64> {
    match (c.result, c.target) {
        (0, Target::Mod(x) | Target::Create(x)) => Some(x),
        _ => None,
    }
}

/// One decision on the search's path.
#[derive(Clone, Copy)]
pub(super) struct Frame {
    /// The step undone.
    pub(super) at: usize,
    /// The branch tried.
    pub(super) branch: bool,
    /// Whether the other branch is still to try.
    pub(super) other_left: bool,
    /// `R` before the step and the search's state then, to go back to.
    revision: Revision,
    mark: Mark,
}

pub(super) struct Search<'a> {
    pub(super) facts: &'a Facts,
    steps: &'a Steps,
    beliefs: HashMap<KeyIx, Belief>,
    undo: Vec<(KeyIx, Option<Belief>)>,
    crossed: bool,
    /// The step it begins the log at: the state before it is what the
    /// search finds.
    floor: usize,
    /// How many keys it believes live with each mod revision.
    live_at: HashMap<Revision, u32>,
    /// The keys the db kept at or below its compaction, by the revision
    /// it kept (sorted) and their ids where the log names them
    /// ([`NOT_IN_LOG`] where not): 16 bytes a key.
    kept_at: Vec<(Revision, KeyIx)>,
}

/// Where a search stands, to go back to: the undo log's length and whether
/// the compaction was crossed.
#[derive(Clone, Copy)]
pub(super) struct Mark {
    undo: usize,
    crossed: bool,
}

impl<'a> Search<'a> {
    /// A search from the db's head, knowing nothing more than the db, for
    /// the state before step `floor` (the steps below it are left alone).
    pub(super) fn new(facts: &'a Facts, steps: &'a Steps, floor: usize) -> Search<'a> {
        let mut kept_at: Vec<(Revision, KeyIx)> = facts
            .keys
            .iter()
            .filter_map(|(key, held)| {
                let kept = held.kept_state.as_ref()?;
                Some((
                    kept.mod_revision,
                    steps.ids.get(key.as_slice()).copied().unwrap_or(NOT_IN_LOG),
                ))
            })
            .collect();
        kept_at.sort_unstable();
        Search {
            facts,
            steps,
            beliefs: HashMap::new(),
            undo: Vec::new(),
            crossed: false,
            floor,
            live_at: HashMap::new(),
            kept_at,
        }
    }

    /// Back to the db's head, knowing nothing more than the db.
    pub(super) fn reset(&mut self) {
        self.rewind(Mark {
            undo: 0,
            crossed: false,
        });
    }

    /// Where it stands now.
    pub(super) fn mark(&self) -> Mark {
        Mark {
            undo: self.undo.len(),
            crossed: self.crossed,
        }
    }

    /// Back to where it stood at `mark`.
    pub(super) fn rewind(&mut self, mark: Mark) {
        while self.undo.len() > mark.undo {
            let (key, old) = self.undo.pop().expect("longer than the mark");
            self.tally(old.as_ref(), 1);
            let now = match old {
                Some(b) => self.beliefs.insert(key, b),
                None => self.beliefs.remove(&key),
            };
            self.tally(now.as_ref(), -1);
        }
        self.crossed = mark.crossed;
    }

    /// Whether the compaction was crossed: below it, keys are as the db
    /// kept them there.
    pub(super) fn crossed(&self) -> bool {
        self.crossed
    }

    /// What is known of `key` where the search stands (right after the
    /// step being undone): what it believes, or for a key it does not,
    /// what the db holds: at its head, or once the compaction was crossed,
    /// there.
    pub(super) fn known(&self, key: KeyIx) -> Belief {
        if let Some(b) = self.beliefs.get(&key) {
            return b.clone();
        }
        let held = self.facts.keys.get(self.steps.keys[key as usize].as_slice());
        let state = match self.crossed {
            false => held.and_then(|h| h.head.clone()),
            true => held.and_then(|h| h.kept_state.clone()),
        };
        state.map_or(Belief::Absent, |s| Belief::Live(Known::exact(&s)))
    }

    fn set(&mut self, key: KeyIx, belief: Belief) {
        self.tally(Some(&belief), 1);
        let old = self.beliefs.insert(key, belief);
        self.tally(old.as_ref(), -1);
        self.undo.push((key, old));
    }

    /// Counts `belief` in [`Search::live_at`] (`by` 1) or out (-1).
    fn tally(&mut self, belief: Option<&Belief>, by: i32) {
        if let Some(Belief::Live(Known {
            mod_revision: Some(m),
            ..
        })) = belief
        {
            let n = self.live_at.entry(*m).or_default();
            *n = n.checked_add_signed(by).expect("counted in before out");
        }
    }

    /// How many keys, where the search stands, are live with mod revision
    /// `r`: those it believes so, and those it does not name that the db
    /// kept at `r` (below the compaction, a key no step since touched is
    /// as the db kept it).
    fn live_with(&self, r: Revision) -> usize {
        let believed = self.live_at.get(&r).copied().unwrap_or(0) as usize;
        let from = self.kept_at.partition_point(|(at, _)| *at < r);
        let kept = self.kept_at[from..]
            .iter()
            .take_while(|(at, _)| *at == r)
            .filter(|(_, ix)| *ix == NOT_IN_LOG || !self.beliefs.contains_key(ix))
            .count();
        believed + kept
    }

    /// Whether the steps before `at` that name `key` could leave it as
    /// `belief` right before `at` (`r` being the revision `at` writes if it
    /// writes): the newest of them that could write it must fit it, and
    /// those after it must be able to leave it alone. A wrong outcome that
    /// fits where it is taken is so refuted there, not at the key's earlier
    /// writes, thousands of steps below in a large keyspace. It looks at
    /// [`LOOKAHEAD`] steps at most, none below the search's floor nor
    /// across a revoke that may have deleted keys.
    fn could_be_left(&self, key: KeyIx, at: usize, r: Revision, belief: &Belief) -> bool {
        let mut below = at;
        for _ in 0..LOOKAHEAD {
            let Some(p) = self.steps.previous(key, below).filter(|&p| p >= self.floor) else {
                return true;
            };
            if self.steps.deleting_revoke_between(p, at) {
                return true;
            }
            let Step::Txn {
                compares,
                success,
                failure,
            } = &self.steps.steps[p]
            else {
                return true;
            };
            // A put at `p` wrote a revision no lower than one a step for
            // each step since below `r`, and, where its compares held, above
            // each revision they held equal to.
            let lowest = r.0 - (at - p) as i64;
            let mut left_alone = false;
            for (branch, writes) in [(true, success), (false, failure)] {
                let fits = match writes.iter().find(|w| w.key() == key) {
                    Some(Write::Put { lease: 0, value, .. }) => {
                        let above = match branch {
                            true => compares.iter().filter_map(named_equal).max().unwrap_or(0),
                            false => 0,
                        };
                        let revision_fits = match belief {
                            Belief::Live(k) => k.mod_revision.is_none_or(|m| m.0 >= lowest && m.0 > above),
                            _ => true,
                        };
                        let put = Known {
                            value: Some(*value),
                            lease: Some(0),
                            ..Known::default()
                        };
                        revision_fits && belief.and(&Belief::Live(put)).is_some()
                    }
                    // Its lease may be gone by then: it may write nothing.
                    Some(Write::Put { .. }) => true,
                    Some(Write::Delete(_)) => belief.and(&Belief::Absent).is_some(),
                    None => {
                        let mut on_key = compares.iter().filter(|c| c.key == key).map(|c| belief.holds(c));
                        left_alone |= match branch {
                            true => on_key.all(|h| h != Some(false)),
                            false => compares.iter().any(|c| c.key != key) || on_key.any(|h| h != Some(true)),
                        };
                        false
                    }
                };
                if fits {
                    return true;
                }
            }
            if !left_alone {
                return false;
            }
            below = p;
        }
        true
    }

    /// Crossing the db's compaction: every key believed is what the db
    /// kept there.
    pub(super) fn cross(&mut self) -> Result<(), Refused> {
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
    pub(super) fn undo_step(&mut self, at: usize, branch: bool, r: Revision) -> Result<Revision, Refused> {
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
            let after = self.known(w.key());
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
                None => self.known(c.key),
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
                    let was = at_key.map_or_else(|| self.known(c.key), |i| before[i].1.clone());
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
        // Below the compaction, a key live after a raising step with mod
        // revision `r` was written at `r`, so by this step: one it did not
        // write contradicts (a swap of two steps' outcomes, which would
        // otherwise surface only at the key's next write, thousands of
        // steps away in a large keyspace).
        if self.crossed && raised {
            let wrote = changed
                .iter()
                .filter(|(key, value)| {
                    value.is_some()
                        && matches!(self.known(*key), Belief::Live(Known { mod_revision: Some(m), .. }) if m == r)
                })
                .count();
            if self.live_with(r) > wrote {
                return Err(Refused::Contradiction);
            }
        }
        if before
            .iter()
            .any(|(key, belief)| !self.could_be_left(*key, at, r, belief))
        {
            return Err(Refused::Contradiction);
        }
        for (key, belief) in before {
            self.set(key, belief);
        }
        Ok(if raised { r.prev() } else { r })
    }
}

/// What a search from one step down found.
pub(super) enum Found {
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
    pub(super) fn first_solution(
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
            if at_of(&path) == self.floor {
                return Found::Solution(path);
            }
            let at = at_of(&path) - 1;
            let mark = self.mark();
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
                        mark,
                    });
                    r = next;
                    next_branch = true;
                    continue;
                }
                Err(Refused::Cannot(why)) => return Found::Cannot(at, why),
                Err(Refused::Contradiction) => {
                    self.rewind(mark);
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
                self.rewind(frame.mark);
                r = frame.revision;
                if frame.other_left {
                    next_branch = false;
                    break;
                }
            }
        }
    }
}
