//! Which audited request wrote which stored revision of one key.
//!
//! 1. **Exact**: a successful write whose response carried the object has
//!    its revision (`responseObject.metadata.resourceVersion`). A second
//!    request answered with a revision an earlier one wrote, or a PUT
//!    answered with its own precondition, wrote nothing: a no-op.
//! 2. **Creates by time**: at `Metadata` level a create pairs with the one
//!    create revision whose `creationTimestamp` (whole seconds) is the
//!    second of the request or the one before, when no other create fits.
//! 3. **By order**: between two attributed revisions, the requests sent
//!    between their writers pair one to one with the revisions in between,
//!    when the counts are equal and each pair fits (a create wrote a
//!    create, an update an update, a delete an update or a tombstone). With
//!    no revision in between and attributed writes on both sides, every
//!    update there wrote nothing. After the last attributed revision the
//!    same holds when every request there came before the run that read
//!    the history began. Anything else stays unattributed and is counted:
//!    a write is never given to the wrong request on a guess.
//! 4. **Timed out**: a request answered 504 may still have written: the
//!    apiserver answers when the request's context ends (the client gave
//!    up, or its timeout passed) while the write goes on (`finishRequest`
//!    in k8s.io/apiserver's `endpoints/handlers/finisher`). A revision
//!    still without a writer is its when it is the only such request that
//!    fits it (kind, precondition, and the clock within the request
//!    timeout on either side of the answer) and no open request could
//!    have written it either.

use crate::store::audit::{KeyAttribution, KeyRequest, KeyRevision, Match, Outcome};
use jiff::{SignedDuration, Timestamp};

/// What a request can have written, by its verb and subresource.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Writes {
    Create,
    Update,
    Delete,
}

fn writes(r: &KeyRequest) -> Option<Writes> {
    Some(match (r.verb.as_str(), r.subresource.as_deref()) {
        ("create", None) => Writes::Create,
        // A binding sets the Pod's node; an eviction deletes the Pod.
        ("create", Some("binding")) => Writes::Update,
        ("create", Some("eviction")) => Writes::Delete,
        ("update" | "patch", _) => Writes::Update,
        ("delete", _) => Writes::Delete,
        _ => return None,
    })
}

fn succeeded(r: &KeyRequest) -> bool {
    matches!(r.code, Some(200..=299))
}

/// Answered `504 Timeout`: the write may have happened, before the answer
/// or after it.
fn timed_out(r: &KeyRequest) -> bool {
    r.code == Some(504)
}

/// Whether `w` can have written `rev`. `exact` allows an update or patch
/// that created the object (server-side apply, create on update).
fn fits(w: Writes, rev: &KeyRevision, exact: bool) -> bool {
    let create = !rev.deleted && rev.version == 1;
    match w {
        Writes::Create => create,
        Writes::Update => !rev.deleted && (rev.version > 1 || exact),
        Writes::Delete => rev.deleted || rev.version > 1,
    }
}

/// Whether a create answered at `at` can have stored `creation` (whole
/// seconds, set before the write, the response after it) when answered
/// within `within` of it.
fn created_at(creation: Option<&str>, at: Timestamp, within: SignedDuration) -> bool {
    let Some(ct) = creation.and_then(|c| c.parse::<Timestamp>().ok()) else {
        return false;
    };
    let after = at.duration_since(ct);
    after >= SignedDuration::ZERO && after < within
}

/// A create is usually answered within the second it stamped or the next.
const CREATED_WITHIN: SignedDuration = SignedDuration::from_secs(2);

/// How long after its write a request may be answered, at most: the
/// apiserver's default request timeout.
const ANSWERED_WITHIN: SignedDuration = SignedDuration::from_secs(60);

/// Whether the clock lets `request` have written `rev`: it was answered
/// after the write, and within the request timeout of it.
fn in_time(request: &KeyRequest, rev: &KeyRevision) -> bool {
    rev.written.earliest.is_none_or(|e| e <= request.time)
        && rev
            .written
            .latest
            .is_none_or(|l| request.time <= l + ANSWERED_WITHIN)
}

/// Joins one key's requests (ordered by time) to its revisions (oldest
/// first). `history_read_at` is when the newest run that read this history
/// began: a request before it wrote nothing the history lacks.
pub fn join(
    revisions: &[KeyRevision],
    requests: &[KeyRequest],
    history_read_at: Option<Timestamp>,
) -> KeyAttribution {
    let mut outcome: Vec<Option<Outcome>> = vec![None; requests.len()];
    // Revision index → (request index, match).
    let mut writer: Vec<Option<(usize, Match)>> = vec![None; revisions.len()];
    for (i, r) in requests.iter().enumerate() {
        if writes(r).is_none() {
            outcome[i] = Some(Outcome::Unmatched);
        } else if !succeeded(r) {
            outcome[i] = Some(Outcome::Failed);
        }
    }
    exact(revisions, requests, &mut outcome, &mut writer);
    // Creates answered promptly first; then, for those left, slower ones
    // the clock also places after their write.
    creates(revisions, requests, CREATED_WITHIN, &mut outcome, &mut writer);
    creates(revisions, requests, ANSWERED_WITHIN, &mut outcome, &mut writer);
    finalized_deletes(revisions, requests, &mut writer);
    graceful_deletes(revisions, requests, &outcome, &mut writer);
    let mut left = by_order(revisions, requests, history_read_at, &mut outcome, &mut writer);
    left.extend(by_fit(
        revisions,
        requests,
        history_read_at,
        &mut outcome,
        &mut writer,
    ));
    timed_out_writes(revisions, requests, &mut outcome, &mut writer);
    finalized_deletes(revisions, requests, &mut writer);
    left.sort_unstable();
    left.dedup();
    let unattributed = left.iter().filter(|&&r| writer[r].is_none()).count() as u64;
    KeyAttribution {
        outcomes: requests
            .iter()
            .zip(outcome)
            .map(|(r, o)| (r.id, o.unwrap_or(Outcome::Ambiguous)))
            .collect(),
        writers: revisions
            .iter()
            .zip(writer)
            .filter_map(|(rev, w)| w.map(|(i, m)| (rev.mod_revision, requests[i].id, m)))
            .collect(),
        unattributed,
    }
}

fn exact(
    revisions: &[KeyRevision],
    requests: &[KeyRequest],
    outcome: &mut [Option<Outcome>],
    writer: &mut [Option<(usize, Match)>],
) {
    for (i, r) in requests.iter().enumerate() {
        let (None, Some(at), Some(w)) = (outcome[i], r.response_revision, writes(r)) else {
            continue;
        };
        outcome[i] = Some(if r.verb == "update" && r.precondition_revision == Some(at) {
            Outcome::NoOp
        } else {
            match revisions.binary_search_by_key(&at, |rev| rev.mod_revision) {
                Err(_) => Outcome::Unmatched,
                Ok(j) if writer[j].is_some() && w == Writes::Update => Outcome::NoOp,
                Ok(j) if writer[j].is_some() => Outcome::Unmatched,
                Ok(j) if fits(w, &revisions[j], true) => {
                    writer[j] = Some((i, Match::Exact));
                    Outcome::Wrote
                }
                Ok(_) => Outcome::Unmatched,
            }
        });
    }
}

fn creates(
    revisions: &[KeyRevision],
    requests: &[KeyRequest],
    within: SignedDuration,
    outcome: &mut [Option<Outcome>],
    writer: &mut [Option<(usize, Match)>],
) {
    let open = |i: usize, outcome: &[Option<Outcome>]| {
        outcome[i].is_none() && writes(&requests[i]) == Some(Writes::Create)
    };
    for i in 0..requests.len() {
        if !open(i, outcome) {
            continue;
        }
        let fitting = |i: usize, j: usize| {
            fits(Writes::Create, &revisions[j], false)
                && created_at(
                    revisions[j].creation_timestamp.as_deref(),
                    requests[i].time,
                    within,
                )
                && (within == CREATED_WITHIN || in_time(&requests[i], &revisions[j]))
        };
        let candidates: Vec<usize> = (0..revisions.len())
            .filter(|&j| writer[j].is_none() && fitting(i, j))
            .collect();
        let [j] = candidates[..] else { continue };
        let rivals = (0..requests.len()).filter(|&k| k != i && open(k, outcome) && fitting(k, j));
        if rivals.count() == 0 {
            writer[j] = Some((i, Match::ByOrder));
            outcome[i] = Some(Outcome::Wrote);
        }
    }
}

/// The delete that follows an update removing the last finalizer of an
/// object being deleted is the same request's (the apiserver deletes it
/// before answering): the tombstone right after such a revision is its
/// writer's too.
fn finalized_deletes(
    revisions: &[KeyRevision],
    requests: &[KeyRequest],
    writer: &mut [Option<(usize, Match)>],
) {
    for j in 1..revisions.len() {
        let Some((i, how)) = writer[j - 1] else { continue };
        if writer[j].is_none()
            && revisions[j].deleted
            && revisions[j - 1].deleting
            && writes(&requests[i]) == Some(Writes::Update)
        {
            writer[j] = Some((i, how));
        }
    }
}

/// A DELETE of an object that can go at once (no finalizer, a grace period
/// of zero: a Pod never scheduled or already finished) still writes two
/// revisions: the update setting `deletionTimestamp` (and bumping the
/// generation), then the tombstone, and answers with the tombstone's
/// revision (`Store.Delete` in k8s.io/apiserver's generic registry). The
/// update right before a tombstone a delete wrote is that delete's too,
/// when it is marked for deletion with no finalizer left and no other
/// request still unexplained, sent since the writer of the revision before
/// it, could have written it. (A kubelet's final DELETE with grace 0 of a
/// Pod already marked with a grace period writes the same pair.)
fn graceful_deletes(
    revisions: &[KeyRevision],
    requests: &[KeyRequest],
    outcome: &[Option<Outcome>],
    writer: &mut [Option<(usize, Match)>],
) {
    for j in 1..revisions.len() {
        let Some((i, how)) = writer[j] else { continue };
        let marked = &revisions[j - 1];
        if !revisions[j].deleted
            || writes(&requests[i]) != Some(Writes::Delete)
            || writer[j - 1].is_some()
            || marked.deleted
            || !marked.deleting
            || !in_time(&requests[i], marked)
        {
            continue;
        }
        // Requests since the writer of the last attributed revision
        // before the mark.
        let since = writer[..j - 1]
            .iter()
            .rev()
            .find_map(|w| w.map(|(k, _)| k + 1))
            .unwrap_or(0);
        let rival = (since..i).any(|k| {
            outcome[k].is_none() && matches!(writes(&requests[k]), Some(Writes::Update | Writes::Delete))
        });
        if !rival {
            writer[j - 1] = Some((i, how));
        }
    }
}

/// Whether `request` can have written `revisions[r]`: by its kind, its
/// precondition and the clock.
fn could_write(revisions: &[KeyRevision], r: usize, request: &KeyRequest) -> bool {
    let follows = request
        .precondition_revision
        .is_none_or(|p| r > 0 && revisions[r - 1].mod_revision == p);
    writes(request).is_some_and(|w| fits(w, &revisions[r], false))
        && follows
        && in_time(request, &revisions[r])
}

/// A tombstone the update before it wrote (its last finalizer removed),
/// not a request of its own.
fn finalized(revisions: &[KeyRevision], r: usize) -> bool {
    r > 0 && revisions[r].deleted && revisions[r - 1].deleting
}

/// Pairs requests and revisions between known writes; returns the
/// revisions requests could have written that it left unattributed.
fn by_order(
    revisions: &[KeyRevision],
    requests: &[KeyRequest],
    history_read_at: Option<Timestamp>,
    outcome: &mut [Option<Outcome>],
    writer: &mut [Option<(usize, Match)>],
) -> Vec<usize> {
    let mut unattributed = Vec::new();
    // Attributed revisions, oldest first, with their requests' positions.
    let anchors: Vec<(usize, usize)> = writer
        .iter()
        .enumerate()
        .filter_map(|(j, w)| w.map(|(i, _)| (j, i)))
        .collect();
    // Writers must have been answered in the order they wrote; if not, the
    // clocks of the logs disagree and order tells nothing.
    // (One request may have written two revisions in a row.)
    if anchors.windows(2).any(|w| w[0].1 > w[1].1) {
        return (0..writer.len()).filter(|&r| writer[r].is_none()).collect();
    }
    for (k, &(j, i)) in anchors.iter().enumerate() {
        let (next_j, next_i, bounded) = match anchors.get(k + 1) {
            Some(&(nj, ni)) => (nj, ni, true),
            None => (revisions.len(), requests.len(), false),
        };
        let queued: Vec<usize> = (i + 1..next_i).filter(|&q| outcome[q].is_none()).collect();
        if queued.is_empty() {
            continue;
        }
        let settled =
            bounded || history_read_at.is_some_and(|read| queued.iter().all(|&q| requests[q].time < read));
        if !settled {
            continue;
        }
        // A finalized delete is written by the update before it, not
        // by a request of its own.
        let between: Vec<usize> = (j + 1..next_j)
            .filter(|&r| !(r > j + 1 && finalized(revisions, r)))
            .collect();
        if between.is_empty() {
            if queued
                .iter()
                .all(|&q| writes(&requests[q]) == Some(Writes::Update))
            {
                queued.iter().for_each(|&q| outcome[q] = Some(Outcome::NoOp));
            }
            continue;
        }
        let pairs_fit = between.len() == queued.len()
            && queued
                .iter()
                .zip(&between)
                .all(|(&q, &r)| could_write(revisions, r, &requests[q]));
        if pairs_fit {
            for (&q, &r) in queued.iter().zip(&between) {
                writer[r] = Some((q, Match::ByOrder));
                outcome[q] = Some(Outcome::Wrote);
            }
        } else {
            unattributed.extend(between);
        }
    }
    unattributed
}

/// What order cannot place: a write answered after a later one of the same
/// key (a Pod's create answered after the scheduler, watching, bound it).
/// After the first attributed revision, when the requests still open (all
/// answered before the history was read) and the revisions still
/// unattributed are as many, and the kind, precondition and clock let each
/// revision have been written by exactly one of those requests, each by a
/// different one, they pair. Anything less certain stays open; returns the
/// revisions left that an open request could have written.
fn by_fit(
    revisions: &[KeyRevision],
    requests: &[KeyRequest],
    history_read_at: Option<Timestamp>,
    outcome: &mut [Option<Outcome>],
    writer: &mut [Option<(usize, Match)>],
) -> Vec<usize> {
    let Some(first) = writer.iter().position(Option::is_some) else {
        return Vec::new();
    };
    let open: Vec<usize> = (0..requests.len())
        .filter(|&q| outcome[q].is_none() && writes(&requests[q]).is_some())
        .collect();
    let settled = history_read_at.is_some_and(|read| open.iter().all(|&q| requests[q].time < read));
    if open.is_empty() || !settled {
        return Vec::new();
    }
    let unwritten: Vec<(usize, Vec<usize>)> = (first + 1..revisions.len())
        .filter(|&r| writer[r].is_none() && !finalized(revisions, r))
        .map(|r| {
            let could: Vec<usize> = open
                .iter()
                .copied()
                .filter(|&q| could_write(revisions, r, &requests[q]))
                .collect();
            (r, could)
        })
        .collect();
    let mut chosen: Vec<usize> = unwritten.iter().flat_map(|(_, could)| could.clone()).collect();
    chosen.sort_unstable();
    chosen.dedup();
    let one_each = unwritten.iter().all(|(_, could)| could.len() == 1) && chosen.len() == unwritten.len();
    if open.len() != unwritten.len() || !one_each {
        return unwritten
            .into_iter()
            .filter(|(_, could)| !could.is_empty())
            .map(|(r, _)| r)
            .collect();
    }
    for (r, could) in unwritten {
        writer[r] = Some((could[0], Match::ByOrder));
        outcome[could[0]] = Some(Outcome::Wrote);
    }
    Vec::new()
}

/// Gives a revision without a writer to the one request answered 504 that
/// can have written it, when no open request could have and that request
/// fits no other such revision (see the module docs, 4).
fn timed_out_writes(
    revisions: &[KeyRevision],
    requests: &[KeyRequest],
    outcome: &mut [Option<Outcome>],
    writer: &mut [Option<(usize, Match)>],
) {
    let late: Vec<usize> = (0..requests.len())
        .filter(|&q| timed_out(&requests[q]) && outcome[q] == Some(Outcome::Failed))
        .collect();
    // Most keys have no request answered 504: nothing to look at.
    if late.is_empty() {
        return;
    }
    let unwritten: Vec<usize> = (0..revisions.len())
        .filter(|&r| writer[r].is_none() && !finalized(revisions, r))
        .collect();
    let fits_late = |r: usize, q: usize| {
        let (request, rev) = (&requests[q], &revisions[r]);
        let Some(w) = writes(request) else { return false };
        let follows = request
            .precondition_revision
            .is_none_or(|p| r > 0 && revisions[r - 1].mod_revision == p);
        let created = w != Writes::Create
            || created_at(rev.creation_timestamp.as_deref(), request.time, ANSWERED_WITHIN);
        fits(w, rev, false)
            && follows
            && created
            && rev
                .written
                .earliest
                .is_none_or(|e| e <= request.time + ANSWERED_WITHIN)
            && rev
                .written
                .latest
                .is_none_or(|l| request.time <= l + ANSWERED_WITHIN)
    };
    for &r in &unwritten {
        let could: Vec<usize> = late.iter().copied().filter(|&q| fits_late(r, q)).collect();
        let [q] = could[..] else { continue };
        let open_rival = (0..requests.len()).any(|o| {
            outcome[o].is_none() && writes(&requests[o]).is_some() && could_write(revisions, r, &requests[o])
        });
        let elsewhere = unwritten.iter().any(|&o| o != r && fits_late(o, q));
        if !open_rival && !elsewhere {
            writer[r] = Some((q, Match::ByOrder));
            outcome[q] = Some(Outcome::Wrote);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::source::Revision;

    fn rev(mod_revision: i64, version: i64) -> KeyRevision {
        KeyRevision {
            mod_revision: Revision(mod_revision),
            version,
            deleted: version == 0,
            creation_timestamp: (version == 1).then(|| "2026-11-29T09:00:00Z".into()),
            written: Default::default(),
            deleting: false,
        }
    }

    fn req(id: i64, verb: &str, code: u16, secs: i64, response: Option<i64>) -> KeyRequest {
        KeyRequest {
            id,
            verb: verb.into(),
            subresource: None,
            code: Some(code),
            response_revision: response.map(Revision),
            precondition_revision: None,
            time: "2026-11-29T09:00:00.5Z".parse::<Timestamp>().unwrap() + SignedDuration::from_secs(secs),
        }
    }

    fn later() -> Option<Timestamp> {
        Some("2026-11-30T00:00:00Z".parse().unwrap())
    }

    #[test]
    fn exact_responses_attribute_and_repeats_are_no_ops() {
        let revs = [rev(5, 1), rev(9, 2)];
        let reqs = [
            req(1, "create", 201, 0, Some(5)),
            req(2, "patch", 200, 1, Some(9)),
            req(3, "patch", 200, 2, Some(9)),
            req(4, "update", 409, 3, None),
            req(5, "get", 200, 4, None),
        ];
        let a = join(&revs, &reqs, later());
        assert_eq!(
            a.writers,
            vec![(Revision(5), 1, Match::Exact), (Revision(9), 2, Match::Exact)]
        );
        assert_eq!(
            a.outcomes,
            vec![
                (1, Outcome::Wrote),
                (2, Outcome::Wrote),
                (3, Outcome::NoOp),
                (4, Outcome::Failed),
                (5, Outcome::Unmatched)
            ]
        );
    }

    #[test]
    fn a_delete_that_goes_at_once_wrote_the_update_marking_it_too() {
        let marked = KeyRevision {
            deleting: true,
            ..rev(7, 2)
        };
        let revs = [rev(5, 1), marked.clone(), rev(8, 0)];
        let reqs = [
            req(1, "create", 201, 0, Some(5)),
            req(2, "delete", 200, 1, Some(8)),
        ];
        let a = join(&revs, &reqs, later());
        assert_eq!(
            a.writers,
            vec![
                (Revision(5), 1, Match::Exact),
                (Revision(7), 2, Match::Exact),
                (Revision(8), 2, Match::Exact)
            ]
        );
        // Another delete that could have marked it (a person's, with a
        // grace period, before the kubelet's): the mark is not given to
        // the tombstone's request; the order gives it to the other.
        let mut rival = reqs.to_vec();
        rival.insert(1, req(3, "delete", 200, 1, None));
        let a = join(&revs, &rival, later());
        assert_eq!(
            a.writers,
            vec![
                (Revision(5), 1, Match::Exact),
                (Revision(7), 3, Match::ByOrder),
                (Revision(8), 2, Match::Exact)
            ]
        );
        // An open request before the last attributed revision is no rival.
        let mut earlier = vec![req(4, "patch", 200, 0, None)];
        earlier.extend_from_slice(&reqs);
        let a = join(&revs, &earlier, later());
        assert!(
            a.writers.contains(&(Revision(7), 2, Match::Exact)),
            "{:?}",
            a.writers
        );
        // Not marked for deletion: some other write.
        let plain = [rev(5, 1), rev(7, 2), rev(8, 0)];
        let a = join(&plain, &reqs, later());
        assert!(!a.writers.iter().any(|w| w.0 == Revision(7)), "{:?}", a.writers);
    }

    #[test]
    fn a_put_answered_with_its_precondition_wrote_nothing() {
        let mut r = req(1, "update", 200, 1, Some(5));
        r.precondition_revision = Some(Revision(5));
        let a = join(&[rev(5, 1)], &[r], later());
        assert_eq!(a.outcomes, vec![(1, Outcome::NoOp)]);
        assert!(a.writers.is_empty());
    }

    #[test]
    fn a_revision_not_stored_is_unmatched() {
        let a = join(&[rev(5, 1)], &[req(1, "patch", 200, 1, Some(7))], later());
        assert_eq!(a.outcomes, vec![(1, Outcome::Unmatched)]);
    }

    #[test]
    fn metadata_level_pairs_by_order_after_the_create() {
        let revs = [rev(5, 1), rev(9, 2), rev(12, 3), rev(15, 0)];
        let reqs = [
            req(1, "create", 201, 0, None),
            req(2, "update", 200, 1, None),
            req(3, "patch", 200, 2, None),
            req(4, "delete", 200, 3, None),
        ];
        let a = join(&revs, &reqs, later());
        assert_eq!(
            a.writers,
            vec![
                (Revision(5), 1, Match::ByOrder),
                (Revision(9), 2, Match::ByOrder),
                (Revision(12), 3, Match::ByOrder),
                (Revision(15), 4, Match::ByOrder)
            ]
        );
    }

    #[test]
    fn counts_that_differ_leave_everything_unattributed() {
        // Three updates, two revisions: one was a no-op, but which?
        let revs = [rev(5, 1), rev(9, 2), rev(12, 3)];
        let reqs = [
            req(1, "create", 201, 0, None),
            req(2, "update", 200, 1, None),
            req(3, "update", 200, 2, None),
            req(4, "update", 200, 3, None),
        ];
        let a = join(&revs, &reqs, later());
        assert_eq!(a.writers, vec![(Revision(5), 1, Match::ByOrder)]);
        assert!(a.outcomes[1..].iter().all(|(_, o)| *o == Outcome::Ambiguous));
        assert_eq!(a.unattributed, 2);
    }

    #[test]
    fn requests_after_the_history_was_read_stay_open() {
        let revs = [rev(5, 1), rev(9, 2)];
        let reqs = [req(1, "create", 201, 0, None), req(2, "update", 200, 1, None)];
        let read = Some(reqs[1].time - SignedDuration::from_millis(1));
        let a = join(&revs, &reqs, read);
        assert_eq!(a.writers, vec![(Revision(5), 1, Match::ByOrder)]);
        assert_eq!(a.outcomes[1], (2, Outcome::Ambiguous));
    }

    #[test]
    fn updates_between_two_known_writes_with_no_revision_are_no_ops() {
        let revs = [rev(5, 1), rev(9, 2)];
        let reqs = [
            req(1, "create", 201, 0, Some(5)),
            req(2, "update", 200, 1, None),
            req(3, "update", 200, 2, None),
            req(4, "patch", 200, 3, Some(9)),
        ];
        let a = join(&revs, &reqs, None);
        assert_eq!(a.outcomes[1], (2, Outcome::NoOp));
        assert_eq!(a.outcomes[2], (3, Outcome::NoOp));
    }

    #[test]
    fn a_precondition_that_does_not_follow_breaks_the_pairing() {
        let revs = [rev(5, 1), rev(9, 2)];
        let mut update = req(2, "update", 200, 1, None);
        update.precondition_revision = Some(Revision(7));
        let a = join(&revs, &[req(1, "create", 201, 0, None), update], later());
        assert_eq!(a.outcomes[1], (2, Outcome::Ambiguous));
    }

    #[test]
    fn an_update_removing_the_last_finalizer_wrote_the_delete_too() {
        let mut finalized = rev(9, 2);
        finalized.deleting = true;
        let revs = [rev(5, 1), finalized, rev(10, 0)];
        let reqs = [
            req(1, "create", 201, 0, Some(5)),
            req(2, "update", 200, 1, Some(9)),
        ];
        let a = join(&revs, &reqs, later());
        assert_eq!(
            a.writers,
            vec![
                (Revision(5), 1, Match::Exact),
                (Revision(9), 2, Match::Exact),
                (Revision(10), 2, Match::Exact)
            ]
        );
        // At Metadata level, by order, the same.
        let reqs = [req(1, "create", 201, 0, None), req(2, "update", 200, 1, None)];
        let a = join(&revs, &reqs, later());
        assert_eq!(
            a.writers,
            vec![
                (Revision(5), 1, Match::ByOrder),
                (Revision(9), 2, Match::ByOrder),
                (Revision(10), 2, Match::ByOrder)
            ]
        );
    }

    #[test]
    fn a_pairing_the_clock_rules_out_is_not_made() {
        // The second update's revision was written after it was answered:
        // someone else wrote it.
        let mut late = rev(12, 3);
        late.written.earliest = Some("2026-11-29T09:00:10Z".parse().unwrap());
        let revs = [rev(5, 1), rev(9, 2), late];
        let reqs = [
            req(1, "create", 201, 0, None),
            req(2, "update", 200, 1, None),
            req(3, "update", 200, 2, None),
        ];
        let a = join(&revs, &reqs, later());
        assert_eq!(a.writers, vec![(Revision(5), 1, Match::ByOrder)]);
    }

    #[test]
    fn a_create_answered_seconds_after_its_timestamp_is_found() {
        // An Event created under load: stamped at 09:00:00, answered 5 s
        // later, after its write.
        let mut created = rev(5, 1);
        created.written.earliest = Some("2026-11-29T09:00:02Z".parse().unwrap());
        let a = join(&[created], &[req(1, "create", 201, 5, None)], later());
        assert_eq!(a.writers, vec![(Revision(5), 1, Match::ByOrder)]);
        // Not one answered before the write.
        let mut late = rev(5, 1);
        late.written.earliest = Some("2026-11-29T09:00:06Z".parse().unwrap());
        let a = join(&[late], &[req(1, "create", 201, 5, None)], later());
        assert!(a.writers.is_empty());
    }

    #[test]
    fn a_write_answered_before_the_one_it_followed_is_placed_by_fit() {
        // The scheduler, watching, binds a Pod before its create is
        // answered; the binding's response carries no Pod.
        let revs = [rev(454, 1), rev(456, 2), rev(457, 3)];
        let mut binding = req(1, "create", 201, 0, None);
        binding.subresource = Some("binding".into());
        let reqs = [
            binding,
            req(2, "create", 201, 1, Some(454)),
            req(3, "patch", 200, 2, Some(457)),
        ];
        let a = join(&revs, &reqs, later());
        assert_eq!(
            a.writers,
            vec![
                (Revision(454), 2, Match::Exact),
                (Revision(456), 1, Match::ByOrder),
                (Revision(457), 3, Match::Exact)
            ]
        );
        assert_eq!(a.unattributed, 0);
        // A second open request that could have written it: no guess.
        let mut rival = reqs.to_vec();
        rival.insert(1, req(4, "update", 200, 0, None));
        let a = join(&revs, &rival, later());
        assert!(!a.writers.iter().any(|w| w.0 == Revision(456)), "{:?}", a.writers);
        assert_eq!(a.unattributed, 1);
        // Nor when the history was read before it was answered.
        let a = join(&revs, &reqs, Some(reqs[0].time));
        assert!(!a.writers.iter().any(|w| w.0 == Revision(456)), "{:?}", a.writers);
    }

    #[test]
    fn a_create_answered_504_that_wrote_is_found() {
        // The client gave up (the scheduler restarting) while its Event's
        // create went on: answered 504, stored all the same.
        let a = join(&[rev(5, 1)], &[req(1, "create", 504, 0, None)], later());
        assert_eq!(a.writers, vec![(Revision(5), 1, Match::ByOrder)]);
        assert_eq!(a.outcomes, vec![(1, Outcome::Wrote)]);
        // Written after the answer (within the request timeout): still its.
        let mut after = rev(5, 1);
        after.written.earliest = Some("2026-11-29T09:00:20Z".parse().unwrap());
        let a = join(&[after], &[req(1, "create", 504, 0, None)], later());
        assert_eq!(a.writers, vec![(Revision(5), 1, Match::ByOrder)]);
        // One that wrote nothing stays failed.
        let a = join(
            &[rev(5, 1)],
            &[req(1, "create", 201, 0, Some(5)), req(2, "create", 504, 1, None)],
            later(),
        );
        assert_eq!(a.outcomes[1], (2, Outcome::Failed));
        // Two that could have written it: no guess.
        let a = join(
            &[rev(5, 1)],
            &[req(1, "create", 504, 0, None), req(2, "create", 504, 0, None)],
            later(),
        );
        assert!(a.writers.is_empty(), "{:?}", a.writers);
        // Nor when an open request could have, or the clock rules it out.
        let reqs = [
            req(1, "create", 201, 0, Some(5)),
            req(2, "update", 504, 1, None),
            req(3, "update", 200, 2, None),
        ];
        let a = join(&[rev(5, 1), rev(9, 2)], &reqs, later());
        assert!(!a.writers.iter().any(|w| w.1 == 2), "{:?}", a.writers);
        let mut long_after = rev(9, 2);
        long_after.written.earliest = Some("2026-11-29T09:05:00Z".parse().unwrap());
        let reqs = [req(1, "create", 201, 0, Some(5)), req(2, "update", 504, 1, None)];
        let a = join(&[rev(5, 1), long_after], &reqs, later());
        assert_eq!(a.writers, vec![(Revision(5), 1, Match::Exact)]);
    }

    #[test]
    fn two_creates_in_one_second_are_not_guessed() {
        // Recreated within the second: both creates fit both generations.
        let revs = [rev(5, 1), rev(6, 0), rev(7, 1)];
        let reqs = [
            req(1, "create", 201, 0, None),
            req(2, "delete", 200, 0, None),
            req(3, "create", 201, 0, None),
        ];
        let a = join(&revs, &reqs, later());
        assert!(a.writers.is_empty());
    }

    #[test]
    fn history_before_the_first_known_write_is_not_guessed() {
        let mut old = rev(5, 1);
        old.creation_timestamp = Some("2026-01-01T00:00:00Z".into());
        let a = join(&[old, rev(9, 2)], &[req(1, "update", 200, 1, None)], later());
        assert!(a.writers.is_empty());
        assert_eq!(a.outcomes, vec![(1, Outcome::Ambiguous)]);
    }
}
