//! `dangling-owner`: a live object whose ownerReference names an owner that
//! is gone, or that was deleted and created again with another UID (the
//! garbage collector then treats the object as orphaned, or keeps it while
//! people believe it is owned).
//!
//! The garbage collector needs time to act on an owner's deletion, so a
//! reference counts only once it has dangled for at least the grace
//! (`--stuck-after`, 15 minutes by default): from the later of the revision
//! where the object began carrying the reference and the revision where
//! the owner stopped matching it, to the time the cluster was last
//! observed ([`super::clock`]). Objects being deleted themselves, owners of
//! a kind never recorded (left out by the resource filter) and owners
//! whose stored value could not be decoded are not judged.

use super::detector::{Findings, Registration};
use super::clock::Clock;
use crate::source::Revision;
use crate::duration::human;
use super::objects::{Generation, Live, Objects, OwnerRef};
use crate::store::finding::{Finding, Severity};
use std::time::Duration;

pub const NAME: &str = "dangling-owner";

/// Judges the object set at the head, by the cluster's clock.
pub const DETECTOR: Registration = Registration::at_head(NAME, Severity::Medium, "owner problems", detect);

/// How an ownerReference fails to find its owner.
enum Dangling<'a> {
    /// The owner with that UID was deleted at this revision.
    Deleted(Revision),
    /// The name now holds another object (another UID).
    Replaced {
        by: Generation<'a>,
        old_deleted: Option<Revision>,
    },
    /// No object with that UID or name is stored.
    Missing,
}

/// Findings for the live objects with references that have dangled for at
/// least `grace`.
pub fn detect(objects: &Objects, clock: &Clock, grace: Duration, findings: &mut Findings) {
    let Some(now) = clock.now() else { return };
    for (g, live) in objects.live() {
        if live.deletion_timestamp().is_some() {
            continue;
        }
        let problems: Vec<(OwnerRef, Dangling, i64)> = live
            .owners()
            .filter_map(|owner| {
                let (how, since) = dangling(objects, g, &owner)?;
                let by = clock.written_by(since)?;
                let seconds = now.as_second() - by.as_second();
                (seconds >= grace.as_secs() as i64).then_some((owner, how, seconds))
            })
            .collect();
        if !problems.is_empty() {
            findings.push(finding(g, live, &problems));
        }
    }
}

/// How `owner` dangles for `g`, and the revision since when.
fn dangling<'a>(objects: &'a Objects, g: Generation, owner: &OwnerRef) -> Option<(Dangling<'a>, Revision)> {
    let candidates = objects.candidates(owner, g.namespace());
    let same = candidates
        .iter()
        .find(|c| c.uid() == Some(owner.uid()));
    if same.is_some_and(|c| c.live().is_some()) {
        return None;
    }
    if objects.unknown_at(owner.group(), g.namespace(), owner.name()) {
        return None;
    }
    if let Some(by) = candidates.iter().find(|c| c.live().is_some()) {
        let old_deleted = same.and_then(|c| c.deleted());
        return Some((
            Dangling::Replaced { by: *by, old_deleted },
            owner.since().max(by.created()),
        ));
    }
    if let Some(deleted) = same.and_then(|c| c.deleted()) {
        return Some((Dangling::Deleted(deleted), owner.since().max(deleted)));
    }
    if candidates.is_empty() && !objects.knows_kind(owner.group(), owner.kind()) {
        return None;
    }
    let gone = candidates.iter().filter_map(|c| c.deleted()).max().unwrap_or_default();
    Some((Dangling::Missing, owner.since().max(gone)))
}

fn finding(g: Generation, live: Live, problems: &[(OwnerRef, Dangling, i64)]) -> Finding {
    let owner_text = |o: &OwnerRef| format!("{} {} (uid {})", o.kind(), o.name(), o.uid());
    let lines: Vec<String> = problems
        .iter()
        .map(|(o, how, seconds)| {
            let what = match how {
                Dangling::Deleted(rev) => format!("deleted at revision {rev}"),
                Dangling::Replaced { by, old_deleted } => format!(
                    "{}recreated with uid {} at revision {}",
                    old_deleted
                        .map(|d| format!("deleted at revision {d} and "))
                        .unwrap_or_default(),
                    by.uid().unwrap_or("?"),
                    by.created()
                ),
                Dangling::Missing => "not stored".to_string(),
            };
            format!(
                "{}: {what}, dangling for at least {}",
                owner_text(o),
                human(*seconds)
            )
        })
        .collect();
    let recreated = problems
        .iter()
        .any(|(_, how, _)| matches!(how, Dangling::Replaced { .. }));
    Finding {
        detector: NAME,
        severity: Severity::Medium,
        keys: vec![g.key().to_string()],
        revisions: vec![live.revision()],
        summary: format!(
            "{} is owned by {}{}",
            g.object(),
            lines.join("; "),
            if recreated {
                "; the garbage collector sees another object under that name and may delete this one"
            } else {
                "; the garbage collector has not removed it"
            }
        ),
        details: serde_json::json!({
            "object": g.object(),
            "uid": g.uid(),
            "owners": problems.iter().map(|(o, how, seconds)| {
                let (state, new_uid, changed_at, deleted_at) = match how {
                    Dangling::Deleted(rev) => ("deleted", None, None, Some(*rev)),
                    Dangling::Replaced { by, old_deleted } => ("recreated", by.uid(), Some(by.created()), *old_deleted),
                    Dangling::Missing => ("missing", None, None, None),
                };
                serde_json::json!({
                    "apiVersion": o.api_version(), "kind": o.kind(), "name": o.name(), "uid": o.uid(),
                    "controller": o.controller(), "state": state, "new_uid": new_uid,
                    "recreated_at": changed_at, "deleted_at": deleted_at,
                    "referenced_since": o.since(), "dangling_seconds": seconds,
                })
            }).collect::<Vec<_>>(),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analyze::objects::tests::{owned_by, rev, tombstone};
    use crate::store::object::ObjectRevision;
    use crate::store::RunTime;

    /// A created object at `revision`, timestamped `at`.
    fn at(mut r: ObjectRevision, at: &str) -> ObjectRevision {
        r.facts.creation_timestamp = Some(at.into());
        r
    }

    fn clock_with(objects_seen: &[&[ObjectRevision]], now: &str) -> Clock {
        let mut c = Clock::new(&[RunTime {
            head: crate::source::Revision(1000),
            started_at: now.parse().unwrap(),
            finished_at: Some(now.parse().unwrap()),
            kind: crate::store::RunKind::Live,
        }]);
        objects_seen.iter().for_each(|h| c.observe(h));
        c.finish();
        c
    }

    const OLD: &str = "2026-12-01T08:00:00Z";
    const NOW: &str = "2026-12-01T10:00:00Z";

    fn run(histories: &[Vec<ObjectRevision>]) -> Vec<Finding> {
        let mut objects = Objects::default();
        histories.iter().for_each(|h| objects.push(h).unwrap());
        let seen: Vec<&[ObjectRevision]> = histories.iter().map(|h| &h[..]).collect();
        Findings::of(|out| detect(&objects, &clock_with(&seen, NOW), Duration::from_secs(900), out))
    }

    #[test]
    fn a_deleted_owner_dangles_once_time_has_passed() {
        let rs = at(rev("ReplicaSet", "shop", "web", "rs1", 2, 2), OLD);
        let pod = owned_by(
            at(rev("Pod", "shop", "web-1", "p1", 3, 3), OLD),
            &[("apps/v1", "ReplicaSet", "web", "rs1")],
        );
        let mut rs = rs;
        rs.group = Some("apps".into());
        // Deleted at 4, and an object created at 5 long ago proves 4 is old.
        let later = at(
            rev("ConfigMap", "shop", "later", "c", 5, 5),
            "2026-12-01T08:10:00Z",
        );
        let found = run(&[
            vec![rs.clone(), tombstone(&rs, 4)],
            vec![pod.clone()],
            vec![later],
        ]);
        assert_eq!(found.len(), 1, "{found:#?}");
        assert!(
            found[0]
                .summary
                .contains("ReplicaSet web (uid rs1): deleted at revision 4"),
            "{}",
            found[0].summary
        );
        // With nothing written after the delete, it may be a second old: not judged.
        let found = run(&[vec![rs.clone(), tombstone(&rs, 4)], vec![pod]]);
        assert!(found.is_empty(), "{found:#?}");
    }

    #[test]
    fn a_recreated_owner_gives_both_uids() {
        let old = at(rev("ConfigMap", "shop", "cfg", "old-uid", 2, 2), OLD);
        let new = at(
            rev("ConfigMap", "shop", "cfg", "new-uid", 5, 5),
            "2026-12-01T08:30:00Z",
        );
        let pod = owned_by(
            at(rev("Pod", "shop", "p", "p1", 3, 3), OLD),
            &[("v1", "ConfigMap", "cfg", "old-uid")],
        );
        let found = run(&[vec![old.clone(), tombstone(&old, 4), new], vec![pod]]);
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].details["owners"][0]["state"], "recreated");
        assert_eq!(found[0].details["owners"][0]["new_uid"], "new-uid");
        assert!(
            found[0]
                .summary
                .contains("deleted at revision 4 and recreated with uid new-uid"),
            "{}",
            found[0].summary
        );
    }

    #[test]
    fn healthy_cluster_scoped_unknown_and_unrecorded_owners_are_not_findings() {
        let node = at(rev("Node", "", "n1", "node-uid", 2, 2), OLD);
        let cm = at(rev("ConfigMap", "shop", "cfg", "cfg-uid", 3, 3), OLD);
        let pod = owned_by(
            at(rev("Pod", "shop", "p", "p1", 4, 4), OLD),
            &[
                ("v1", "Node", "n1", "node-uid"),
                ("v1", "ConfigMap", "cfg", "cfg-uid"),
                // No Lease is recorded at all: the filter left them out.
                ("coordination.k8s.io/v1", "Lease", "l", "lease-uid"),
            ],
        );
        assert!(run(&[vec![node], vec![cm], vec![pod]]).is_empty());
    }

    #[test]
    fn a_missing_owner_of_a_recorded_kind_dangles_and_a_deleting_dependent_does_not() {
        let cm = at(rev("ConfigMap", "shop", "other", "x", 2, 2), OLD);
        let pod = owned_by(
            at(rev("Pod", "shop", "p", "p1", 3, 3), OLD),
            &[("v1", "ConfigMap", "gone", "g1")],
        );
        let found = run(&[vec![cm.clone()], vec![pod.clone()]]);
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].details["owners"][0]["state"], "missing");
        let mut deleting = pod;
        deleting.facts.deletion_timestamp = Some(OLD.into());
        assert!(run(&[vec![cm], vec![deleting]]).is_empty());
    }
}
