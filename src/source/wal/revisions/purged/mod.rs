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

mod belief;
mod search;
mod steps;
#[cfg(test)]
mod tests;

pub use steps::Steps;

use super::{Facts, KeyState, ValueDigest};
use crate::source::Revision;
use belief::Belief;
use search::{Found, Search, BUDGET_BASE, BUDGET_PER_STEP};
use std::collections::HashMap;
use steps::{KeyIx, Step};

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
    /// solutions that fit differ there, or the search did not begin there.
    pub skipped: u64,
    /// Why the search began after the log's first entry (how the search
    /// from there failed), if it did.
    pub unsearched: Option<String>,
}

/// Where a log that starts after a raft snapshot starts, or why it is not
/// placed. The search begins at the log's first entry; where it fails from
/// there (its budget spent, an entry it does not follow), the longest tail
/// of the log it places is found by bisection, and the entries before it
/// are counted as skipped, with the reason ([`Start::unsearched`]).
pub fn place(facts: &Facts, steps: &Steps) -> Result<Start, String> {
    let n = steps.steps.len();
    let floor = steps.supported_from;
    let why = match steps.unsupported {
        Some((index, why)) => not_followed(index, why),
        None => match place_from(facts, steps, 0) {
            Ok(start) => return Ok(start),
            Err(why) => why,
        },
    };
    // Tails from below `lo` fail; the longest placed so far begins at `hi`
    // (`n`: none yet). First the longest a search may begin at.
    let (mut lo, mut hi, mut placed) = (floor.max(1), n, None);
    if floor > 0 {
        match place_from(facts, steps, floor) {
            Ok(start) => (hi, placed) = (floor, Some(start)),
            Err(_) => lo = floor + 1,
        }
    }
    let precision = ((n - floor) / TAIL_PRECISION).max(1);
    while lo < hi && (placed.is_none() || hi - lo > precision) {
        let mid = lo + (hi - lo) / 2;
        match place_from(facts, steps, mid) {
            Ok(start) => (hi, placed) = (mid, Some(start)),
            Err(_) => lo = mid + 1,
        }
    }
    match placed {
        Some(mut start) => {
            start.unsearched = Some(why);
            Ok(start)
        }
        None => Err(why),
    }
}

/// Why a log is not placed from before entry `index`: `why` it is an entry
/// the search does not follow.
fn not_followed(index: u64, why: &str) -> String {
    format!("entry {index} is {why}, which placing such a log does not follow yet")
}

/// How finely the bisection for the longest tail placed splits the log.
const TAIL_PRECISION: usize = 256;

/// Where the log starts from step `floor` on, the steps below left alone:
/// the first solution the search finds, then, from the db's head down, each
/// decision on its path whose other branch is not refuted ends what is
/// decided (the log is placed from the entry after it).
fn place_from(facts: &Facts, steps: &Steps, floor: usize) -> Result<Start, String> {
    let mut search = Search::new(facts, steps, floor);
    let n = steps.steps.len();
    let mut budget = BUDGET_BASE + BUDGET_PER_STEP * (n - floor);
    let path = match search.first_solution(n, true, facts.revision, &mut budget) {
        Found::Solution(path) => path,
        Found::None => return Err("no start fits the log and the db".into()),
        Found::Spent => return Err("the search for where it starts ran out of steps".into()),
        Found::Cannot(at, why) => return Err(not_followed(steps.first + at as u64, why)),
    };
    let mut branches = vec![true; n];
    for f in &path {
        branches[f.at] = f.branch;
    }
    // Along the solution from the head down: the first decision whose other
    // branch leads to a solution too (or cannot be refuted) is where the
    // solutions part.
    search.reset();
    let mut r = facts.revision;
    let mut from = floor;
    for f in &path {
        if f.other_left {
            let mark = search.mark();
            let other = search.first_solution(f.at + 1, false, r, &mut budget);
            search.rewind(mark);
            if !matches!(other, Found::None) {
                from = f.at + 1;
                break;
            }
        }
        if !search.crossed() && r <= facts.compacted {
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

/// Where the log starts from step `from` on (the steps before it taken
/// back, `r` the revision before it), with the branches the search decided.
fn start(
    search: &Search<'_>,
    steps: &Steps,
    r: Revision,
    mut branches: Vec<bool>,
    from: usize,
) -> Result<Start, String> {
    let facts = search.facts;
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
        let state = match search.known(ix as KeyIx) {
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
        unsearched: None,
    })
}
