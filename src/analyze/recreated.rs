//! `recreated`: a key with two or more generations whose objects have
//! different UIDs: the object was deleted and created again under the same
//! name (reference §4). Worse when the new object has the same spec (the same
//! object created again) and when it happened more than once. An object
//! whose controlling owner was itself recreated (same kind and name, a new
//! uid) was deleted by the garbage collector's cascade and made again by
//! the new owner's controller, as a Deployment's ReplicaSet is: `info`,
//! pointing at the owner's own finding.

use super::detector::Registration;
use crate::source::Revision;
use crate::store::finding::{Finding, Severity};
use crate::store::object::{seconds_between, ObjectRevision};

pub const NAME: &str = "recreated";

/// Judges each key's history on its own.
pub const DETECTOR: Registration = Registration::per_key(NAME, Severity::Medium, detect);

/// One delete + create of the key.
struct Recreate<'a> {
    old: &'a ObjectRevision,
    deleted_at: Option<Revision>,
    new: &'a ObjectRevision,
}

/// A finding for one key's history (oldest first), if it was recreated.
pub fn detect(history: &[ObjectRevision]) -> Option<Finding> {
    let mut events = Vec::new();
    let mut last_live: Option<&ObjectRevision> = None;
    let mut deleted_at = None;
    for r in history {
        if r.deleted {
            deleted_at = Some(r.mod_revision);
            continue;
        }
        if let Some(prev) = last_live {
            if r.create_revision != prev.create_revision
                && r.uid.is_some()
                && prev.uid.is_some()
                && r.uid != prev.uid
            {
                events.push(Recreate {
                    old: prev,
                    deleted_at,
                    new: r,
                });
                deleted_at = None;
            }
        }
        last_live = Some(r);
    }
    let last = events.last()?;
    let same_spec =
        |e: &Recreate| e.old.facts.spec_hash.is_some() && e.old.facts.spec_hash == e.new.facts.spec_hash;
    let followed_owner = |e: &Recreate| {
        let (old, new) = (&e.old.facts, &e.new.facts);
        old.owner_uid.is_some()
            && new.owner_uid.is_some()
            && old.owner_uid != new.owner_uid
            && old.owner_kind == new.owner_kind
            && old.owner_name == new.owner_name
    };
    let mut severity = if events.iter().any(same_spec) {
        Severity::Medium
    } else {
        Severity::Low
    };
    if events.len() > 1 {
        severity = if severity == Severity::Medium {
            Severity::High
        } else {
            Severity::Medium
        };
    }
    if events.iter().all(followed_owner) {
        severity = Severity::Info;
    }
    let describe = |e: &Recreate| {
        let gap_revs = e.deleted_at.map(|d| e.new.create_revision - d);
        let secs = seconds_between(
            e.old
                .facts
                .deletion_timestamp
                .as_deref()
                .or(e.old.facts.creation_timestamp.as_deref()),
            e.new.facts.creation_timestamp.as_deref(),
        )
        .filter(|_| e.old.facts.deletion_timestamp.is_some());
        let mut gap = Vec::new();
        if let Some(g) = gap_revs {
            gap.push(format!("{g} revision{}", if g == 1 { "" } else { "s" }));
        }
        if let Some(s) = secs {
            gap.push(format!("{s} s"));
        }
        let deleted = e
            .deleted_at
            .map(|d| format!("deleted at revision {d}, "))
            .unwrap_or_default();
        format!(
            "uid {} → {}; {deleted}recreated at revision {}{}{}",
            e.old.uid.as_deref().unwrap_or("-"),
            e.new.uid.as_deref().unwrap_or("-"),
            e.new.create_revision,
            if gap.is_empty() {
                String::new()
            } else {
                format!(", {} later", gap.join(" / "))
            },
            if same_spec(e) { "; same spec" } else { "" }
        ) + &if followed_owner(e) {
            format!(
                "; its owner {} {} was recreated too (uid {} → {}) and its controller made it again",
                e.new.facts.owner_kind.as_deref().unwrap_or("-"),
                e.new.facts.owner_name.as_deref().unwrap_or("-"),
                e.old.facts.owner_uid.as_deref().unwrap_or("-"),
                e.new.facts.owner_uid.as_deref().unwrap_or("-"),
            )
        } else {
            String::new()
        }
    };
    let times = if events.len() == 1 {
        String::new()
    } else {
        format!(" {} times", events.len())
    };
    let details: Vec<serde_json::Value> = events
        .iter()
        .map(|e| {
            serde_json::json!({
                "old_uid": e.old.uid, "new_uid": e.new.uid,
                "old_created_at": e.old.facts.creation_timestamp, "old_deletion_timestamp": e.old.facts.deletion_timestamp,
                "deleted_at_revision": e.deleted_at, "recreated_at_revision": e.new.create_revision,
                "new_created_at": e.new.facts.creation_timestamp, "same_spec": same_spec(e),
                "owner_recreated": followed_owner(e),
                "managers": e.new.facts.managers,
            })
        })
        .collect();
    let mut revisions: Vec<Revision> = events
        .iter()
        .flat_map(|e| e.deleted_at.into_iter().chain([e.new.create_revision]))
        .collect();
    revisions.dedup();
    Some(Finding {
        detector: NAME,
        severity,
        keys: vec![last.new.key.clone()],
        revisions,
        summary: format!(
            "{} deleted and recreated{times} ({})",
            last.new.object(),
            describe(last)
        ),
        details: serde_json::json!({"object": last.new.object(), "count": events.len(), "recreations": details}),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rev(n: i64, create: i64, uid: &str, spec: u8) -> ObjectRevision {
        ObjectRevision {
            key: "/registry/pods/ns/p".into(),
            mod_revision: Revision(n),
            create_revision: Revision(create),
            kind: Some("Pod".into()),
            namespace: Some("ns".into()),
            name: Some("p".into()),
            uid: Some(uid.into()),
            facts: crate::canon::facts::ObjectFacts {
                spec_hash: Some(vec![spec]),
                ..Default::default()
            },
            ..Default::default()
        }
    }

    fn tomb(n: i64, create: i64) -> ObjectRevision {
        ObjectRevision {
            key: "/registry/pods/ns/p".into(),
            mod_revision: Revision(n),
            create_revision: Revision(create),
            deleted: true,
            ..Default::default()
        }
    }

    #[test]
    fn in_place_updates_are_not_recreates() {
        assert!(detect(&[rev(2, 2, "a", 1), rev(3, 2, "a", 2)]).is_none());
    }

    #[test]
    fn same_spec_recreates_rank_higher_and_more_so_when_repeated() {
        let once = detect(&[rev(2, 2, "a", 1), tomb(5, 2), rev(7, 7, "b", 1)]).unwrap();
        assert_eq!(once.severity, Severity::Medium);
        assert_eq!(once.revisions, vec![Revision(5), Revision(7)]);
        assert_eq!(once.summary, "Pod ns/p deleted and recreated (uid a → b; deleted at revision 5, recreated at revision 7, 2 revisions later; same spec)");
        let twice = detect(&[
            rev(2, 2, "a", 1),
            tomb(5, 2),
            rev(7, 7, "b", 1),
            tomb(8, 7),
            rev(9, 9, "c", 1),
        ])
        .unwrap();
        assert_eq!(twice.severity, Severity::High);
        let other_spec = detect(&[rev(2, 2, "a", 1), tomb(5, 2), rev(7, 7, "b", 2)]).unwrap();
        assert_eq!(other_spec.severity, Severity::Low);
    }

    #[test]
    fn a_child_made_again_because_its_owner_was_recreated_is_info() {
        let owned = |n: i64, create: i64, uid: &str, owner: &str| {
            let mut r = rev(n, create, uid, 1);
            r.facts.owner_kind = Some("ReplicaSet".into());
            r.facts.owner_name = Some("web-7d4b9c6f5d".into());
            r.facts.owner_uid = Some(owner.into());
            r
        };
        let cascade = detect(&[owned(2, 2, "a", "rs1"), tomb(5, 2), owned(7, 7, "b", "rs2")]).unwrap();
        assert_eq!(cascade.severity, Severity::Info);
        assert!(
            cascade.summary.ends_with(
                "its owner ReplicaSet web-7d4b9c6f5d was recreated too (uid rs1 → rs2) and its controller made it again)"
            ),
            "{}",
            cascade.summary
        );
        // The same owner: the child itself was deleted and made again.
        let same_owner = detect(&[owned(2, 2, "a", "rs1"), tomb(5, 2), owned(7, 7, "b", "rs1")]).unwrap();
        assert_eq!(same_owner.severity, Severity::Medium);
        // Another owner's name: not the owner's recreation.
        let mut adopted = owned(7, 7, "b", "rs2");
        adopted.facts.owner_name = Some("other".into());
        let adopted = detect(&[owned(2, 2, "a", "rs1"), tomb(5, 2), adopted]).unwrap();
        assert_eq!(adopted.severity, Severity::Medium);
    }
}
