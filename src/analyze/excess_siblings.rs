//! `excess-siblings`: an object created while its identical, live siblings
//! (same namespace, resource, controller owner, generateName and spec at
//! creation) already met what the owner asks for: `spec.replicas` of a
//! ReplicaSet, ReplicationController or StatefulSet, `spec.parallelism` of a
//! Job; for a DaemonSet, a second live pod on one node. For owners whose
//! desired count is unknown, and objects without an owner, identical siblings
//! created within a window are reported at a lower severity. This is how a
//! create retried after a timeout shows up (reference §4).
//!
//! Objects that are terminating (deletionTimestamp set) or finished (phase
//! Succeeded or Failed) do not count as live, as the controllers do not
//! count them; more live objects than desired after a scale-down is normal
//! lag and never reported, since only creates are judged.

use super::detector::{Detector, Findings, KeyInput, Reads, Make, Registration, Whole};
use crate::store::StoreError;
use crate::hex::hex;
use crate::store::finding::{Finding, Severity};
use crate::store::object::{seconds_between, ObjectRevision};
use crate::canon::facts::ObjectFacts;
use std::collections::{BTreeMap, HashMap};

pub const NAME: &str = "excess-siblings";

/// Keeps aside the revisions siblings are counted by, key by key, and
/// sweeps them in revision order at the end.
pub const DETECTOR: Registration = Registration {
    name: NAME,
    reads: Reads::Sweep,
    severity: Severity::Medium,
    topic: None,
    make: Make::With(|_| Ok(Box::new(Siblings::default()))),
};

/// The sibling events of every key seen so far.
#[derive(Default)]
struct Siblings {
    events: Vec<Event>,
}

impl Detector for Siblings {
    fn key(&mut self, input: &mut KeyInput<'_, '_>, _: &mut Findings) -> Result<(), StoreError> {
        self.events.extend(sibling_events(input.history).into_iter().map(Event::of));
        Ok(())
    }

    fn finish(mut self: Box<Self>, _: &Whole<'_>, out: &mut Findings) {
        self.events.sort_by_key(|e| e.mod_revision);
        let mut sweep = Sweep::new(DEFAULT_WINDOW_SECONDS);
        self.events.iter().for_each(|e| sweep.push(&e.revision()));
        out.extend(sweep.finish());
    }
}

/// What the sweep reads of one kept revision, held compactly until the
/// sweep (a whole revision is about 800 bytes inline and this is kept for
/// every generation start of every owned object).
struct Event {
    key: Box<str>,
    mod_revision: i64,
    create_revision: i64,
    deleted: bool,
    desired: Option<i64>,
    resource: Option<Box<str>>,
    kind: Option<Box<str>>,
    namespace: Option<Box<str>>,
    name: Option<Box<str>>,
    uid: Option<Box<str>>,
    owner_kind: Option<Box<str>>,
    owner_name: Option<Box<str>>,
    owner_uid: Option<Box<str>>,
    generate_name: Option<Box<str>>,
    spec_hash: Option<Box<[u8]>>,
    creation_timestamp: Option<Box<str>>,
    deletion_timestamp: Option<Box<str>>,
    phase: Option<Box<str>>,
    node: Option<Box<str>>,
    managers: Option<Box<str>>,
}

impl Event {
    fn of(r: &ObjectRevision) -> Event {
        let text = |s: &Option<String>| s.as_deref().map(Box::from);
        let f = &r.facts;
        Event {
            key: r.key.as_str().into(),
            mod_revision: r.mod_revision,
            create_revision: r.create_revision,
            deleted: r.deleted,
            desired: f.desired,
            resource: text(&r.resource),
            kind: text(&r.kind),
            namespace: text(&r.namespace),
            name: text(&r.name),
            uid: text(&r.uid),
            owner_kind: text(&f.owner_kind),
            owner_name: text(&f.owner_name),
            owner_uid: text(&f.owner_uid),
            generate_name: text(&f.generate_name),
            spec_hash: f.spec_hash.as_deref().map(Box::from),
            creation_timestamp: text(&f.creation_timestamp),
            deletion_timestamp: text(&f.deletion_timestamp),
            phase: text(&f.phase),
            node: text(&f.node),
            managers: text(&f.managers),
        }
    }

    /// The revision as the sweep reads it.
    fn revision(&self) -> ObjectRevision {
        let text = |s: &Option<Box<str>>| s.as_deref().map(str::to_string);
        ObjectRevision {
            key: self.key.to_string(),
            resource: text(&self.resource),
            mod_revision: self.mod_revision,
            create_revision: self.create_revision,
            deleted: self.deleted,
            kind: text(&self.kind),
            namespace: text(&self.namespace),
            name: text(&self.name),
            uid: text(&self.uid),
            facts: ObjectFacts {
                owner_kind: text(&self.owner_kind),
                owner_name: text(&self.owner_name),
                owner_uid: text(&self.owner_uid),
                generate_name: text(&self.generate_name),
                spec_hash: self.spec_hash.as_deref().map(<[u8]>::to_vec),
                creation_timestamp: text(&self.creation_timestamp),
                deletion_timestamp: text(&self.deletion_timestamp),
                phase: text(&self.phase),
                node: text(&self.node),
                desired: self.desired,
                managers: text(&self.managers),
                ..ObjectFacts::default()
            },
            ..ObjectRevision::default()
        }
    }
}

/// The revisions of one key the excess-siblings sweep needs: generation
/// starts, tombstones, liveness changes and changes of a desired count.
/// Keeps the sweep's input small.
fn sibling_events(history: &[ObjectRevision]) -> Vec<&ObjectRevision> {
    if !history
        .iter()
        .any(|r| r.facts.owner_uid.is_some() || r.facts.generate_name.is_some() || r.facts.desired.is_some())
    {
        return Vec::new();
    }
    let live = |r: &ObjectRevision| {
        r.facts.deletion_timestamp.is_none()
            && !matches!(r.facts.phase.as_deref(), Some("Succeeded" | "Failed"))
    };
    let mut out = Vec::new();
    let mut prev: Option<&ObjectRevision> = None;
    for r in history {
        let keep = match prev {
            None => true,
            Some(p) => {
                r.deleted
                    || p.deleted
                    || p.create_revision != r.create_revision
                    || live(p) != live(r)
                    || p.facts.desired != r.facts.desired
            }
        };
        if keep {
            out.push(r);
        }
        prev = Some(r);
    }
    out
}


/// Default window for siblings of owners with no known desired count.
pub const DEFAULT_WINDOW_SECONDS: i64 = 60;

/// Siblings that count toward one owner's desired number.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
struct Group {
    namespace: String,
    resource: String,
    owner_uid: String,
    /// generateName and spec hash at creation, or the node for DaemonSets.
    identity: String,
}

/// A live member.
#[derive(Clone, Debug)]
struct Member {
    key: String,
    name: String,
    uid: Option<String>,
    created_at: Option<String>,
    create_revision: i64,
}

/// The sweep's state across the history, revision by revision.
pub struct Sweep {
    window: i64,
    desired: HashMap<String, (i64, String)>,
    groups: BTreeMap<Group, Vec<Member>>,
    member_of: HashMap<String, Group>,
    findings: Vec<Finding>,
}

fn is_live(r: &ObjectRevision) -> bool {
    r.facts.deletion_timestamp.is_none()
        && !matches!(r.facts.phase.as_deref(), Some("Succeeded") | Some("Failed"))
}

impl Sweep {
    pub fn new(window_seconds: i64) -> Sweep {
        Sweep {
            window: window_seconds,
            desired: HashMap::new(),
            groups: BTreeMap::new(),
            member_of: HashMap::new(),
            findings: Vec::new(),
        }
    }

    fn group_of(r: &ObjectRevision) -> Option<Group> {
        let daemon = r.facts.owner_kind.as_deref() == Some("DaemonSet");
        if r.facts.owner_uid.is_none() && r.facts.generate_name.is_none() {
            return None;
        }
        let identity = if daemon {
            format!("node {}", r.facts.node.clone()?)
        } else {
            format!(
                "{} {}",
                r.facts.generate_name.clone().unwrap_or_default(),
                hex(r.facts.spec_hash.as_deref().unwrap_or_default())
            )
        };
        Some(Group {
            namespace: r.namespace.clone().unwrap_or_default(),
            resource: r.resource.clone().unwrap_or_default(),
            owner_uid: r.facts.owner_uid.clone().unwrap_or_default(),
            identity,
        })
    }

    fn remove(&mut self, key: &str) {
        if let Some(g) = self.member_of.remove(key) {
            if let Some(members) = self.groups.get_mut(&g) {
                members.retain(|m| m.key != key);
            }
        }
    }

    /// Feeds the next revision (in revision order across all keys).
    pub fn push(&mut self, r: &ObjectRevision) {
        if let (Some(d), Some(uid)) = (r.facts.desired, &r.uid) {
            self.desired.insert(uid.clone(), (d, r.object()));
        }
        if r.deleted {
            self.remove(&r.key);
            return;
        }
        if !r.is_create() {
            if self.member_of.contains_key(&r.key) && !is_live(r) {
                self.remove(&r.key);
            } else if !self.member_of.contains_key(&r.key) && is_live(r) {
                // History starts mid-generation: count it, judge nothing.
                if let Some(g) = Self::group_of(r) {
                    self.add(g, r);
                }
            }
            return;
        }
        let Some(group) = Self::group_of(r) else { return };
        self.remove(&r.key);
        let live = self.groups.get(&group).cloned().unwrap_or_default();
        self.judge(&group, r, &live);
        if is_live(r) {
            self.add(group, r);
        }
    }

    fn add(&mut self, group: Group, r: &ObjectRevision) {
        self.groups.entry(group.clone()).or_default().push(Member {
            key: r.key.clone(),
            name: r.name.clone().unwrap_or_default(),
            uid: r.uid.clone(),
            created_at: r.facts.creation_timestamp.clone(),
            create_revision: r.create_revision,
        });
        self.member_of.insert(r.key.clone(), group);
    }

    fn judge(&mut self, group: &Group, r: &ObjectRevision, live: &[Member]) {
        if live.is_empty() {
            return;
        }
        let owner = match (&r.facts.owner_kind, &r.facts.owner_name) {
            (Some(k), Some(n)) => format!(
                "{k} {}{n}",
                r.namespace
                    .as_deref()
                    .map(|ns| format!("{ns}/"))
                    .unwrap_or_default()
            ),
            _ => "no owner".into(),
        };
        let daemon = r.facts.owner_kind.as_deref() == Some("DaemonSet");
        let desired = r
            .facts
            .owner_uid
            .as_ref()
            .and_then(|u| self.desired.get(u))
            .map(|(d, _)| *d);
        let (severity, why, siblings): (Severity, String, Vec<&Member>) = if daemon {
            (
                Severity::Medium,
                format!(
                    "{owner} already had a live pod on {}",
                    r.facts.node.as_deref().unwrap_or("-")
                ),
                live.iter().collect(),
            )
        } else if let Some(d) = desired.filter(|_| {
            matches!(
                r.facts.owner_kind.as_deref(),
                Some("ReplicaSet" | "ReplicationController" | "StatefulSet" | "Job")
            )
        }) {
            if (live.len() as i64) < d {
                return;
            }
            (
                Severity::Medium,
                format!("{owner} already had {} of {d} live", live.len()),
                live.iter().collect(),
            )
        } else {
            let close: Vec<&Member> = live
                .iter()
                .filter(|m| {
                    seconds_between(m.created_at.as_deref(), r.facts.creation_timestamp.as_deref())
                        .is_some_and(|s| s.abs() <= self.window)
                })
                .collect();
            if close.is_empty() {
                return;
            }
            (
                Severity::Low,
                format!(
                    "{} identical sibling(s) of {owner} created within {} s",
                    close.len(),
                    self.window
                ),
                close,
            )
        };
        let names: Vec<&str> = siblings.iter().map(|m| m.name.as_str()).collect();
        let mut keys = vec![r.key.clone()];
        keys.extend(siblings.iter().map(|m| m.key.clone()));
        self.findings.push(Finding {
            detector: NAME,
            severity,
            keys,
            revisions: vec![r.create_revision],
            summary: format!(
                "{} created at revision {} while {} ({})",
                r.object(),
                r.create_revision,
                why,
                names.join(", ")
            ),
            details: serde_json::json!({
                "object": r.object(), "uid": r.uid, "created_at": r.facts.creation_timestamp, "create_revision": r.create_revision,
                "managers": r.facts.managers, "owner": {"kind": r.facts.owner_kind, "name": r.facts.owner_name, "uid": r.facts.owner_uid},
                "desired": desired, "generate_name": r.facts.generate_name, "node": r.facts.node, "group": group.identity,
                "live_siblings": siblings.iter().map(|m| serde_json::json!({
                    "key": m.key, "uid": m.uid, "created_at": m.created_at, "create_revision": m.create_revision})).collect::<Vec<_>>(),
            }),
        });
    }

    pub fn finish(self) -> Vec<Finding> {
        self.findings
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::canon::facts::ObjectFacts;

    fn owner(uid: &str, kind: &str, desired: i64, n: i64) -> ObjectRevision {
        ObjectRevision {
            key: format!("/registry/x/ns/{uid}"),
            kind: Some(kind.into()),
            uid: Some(uid.into()),
            facts: ObjectFacts {
                desired: Some(desired),
                ..Default::default()
            },
            mod_revision: n,
            create_revision: n,
            ..Default::default()
        }
    }

    fn pod(name: &str, n: i64, owner_kind: &str, owner_uid: &str) -> ObjectRevision {
        ObjectRevision {
            key: format!("/registry/pods/ns/{name}"),
            resource: Some("pods".into()),
            kind: Some("Pod".into()),
            namespace: Some("ns".into()),
            name: Some(name.into()),
            uid: Some(format!("u-{name}")),
            facts: ObjectFacts {
                owner_kind: Some(owner_kind.into()),
                owner_name: Some("o".into()),
                owner_uid: Some(owner_uid.into()),
                generate_name: Some("o-".into()),
                spec_hash: Some(vec![1]),
                creation_timestamp: Some("2026-11-29T08:00:00Z".into()),
                ..Default::default()
            },
            mod_revision: n,
            create_revision: n,
            ..Default::default()
        }
    }

    fn run(revs: &[ObjectRevision]) -> Vec<Finding> {
        let mut s = Sweep::new(DEFAULT_WINDOW_SECONDS);
        revs.iter().for_each(|r| s.push(r));
        s.finish()
    }

    #[test]
    fn a_second_job_pod_is_excess() {
        let f = run(&[
            owner("job", "Job", 1, 1),
            pod("a", 2, "Job", "job"),
            pod("b", 3, "Job", "job"),
        ]);
        assert_eq!(f.len(), 1);
        assert_eq!(f[0].revisions, vec![3]);
        assert!(
            f[0].summary.contains("already had 1 of 1 live (a)"),
            "{}",
            f[0].summary
        );
    }

    #[test]
    fn a_healthy_replicaset_and_scale_down_lag_are_not() {
        let rs = |d, n| owner("rs", "ReplicaSet", d, n);
        let mut revs = vec![
            rs(3, 1),
            pod("a", 2, "ReplicaSet", "rs"),
            pod("b", 3, "ReplicaSet", "rs"),
            pod("c", 4, "ReplicaSet", "rs"),
        ];
        revs.push(ObjectRevision {
            mod_revision: 5,
            create_revision: 1,
            ..rs(2, 5)
        });
        revs.push(ObjectRevision {
            key: "/registry/pods/ns/c".into(),
            mod_revision: 8,
            create_revision: 4,
            deleted: true,
            ..Default::default()
        });
        assert!(run(&revs).is_empty());
        revs.push(pod("d", 9, "ReplicaSet", "rs"));
        assert_eq!(run(&revs).len(), 1, "a third pod while at 2 of 2");
    }

    #[test]
    fn terminating_and_finished_pods_do_not_count() {
        let mut failed = pod("a", 3, "Job", "job");
        failed.facts.phase = Some("Failed".into());
        failed.create_revision = 2;
        let revs = [
            owner("job", "Job", 1, 1),
            pod("a", 2, "Job", "job"),
            failed,
            pod("b", 4, "Job", "job"),
        ];
        assert!(run(&revs).is_empty());
    }
}
