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
use crate::source::Revision;
use crate::store::StoreError;
use crate::hex::hex;
use crate::store::finding::{Finding, Severity};
use crate::store::object::{seconds_between, ObjectRevision};
use super::arena::{Chunked, Span, Texts};
use super::names::{Interner, Name};
use hashbrown::HashTable;
use std::collections::HashMap;
use std::hash::BuildHasher;

pub const NAME: &str = "excess-siblings";

/// Siblings a finding names (by key, in its summary and details); the
/// count is always exact.
const SIBLINGS_SHOWN: usize = 10;

/// Keeps aside the revisions siblings are counted by, key by key, and
/// sweeps them in revision order at the end.
pub const DETECTOR: Registration = Registration {
    name: NAME,
    reads: Reads::Sweep,
    severity: Severity::Medium,
    topic: None,
    make: Make::With(|_| Ok(Box::new(Siblings::default()))),
};

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


/// The sibling events of every key seen so far.
#[derive(Default)]
struct Siblings {
    events: Events,
}

impl Detector for Siblings {
    fn key(&mut self, input: &mut KeyInput<'_, '_>, _: &mut Findings) -> Result<(), StoreError> {
        for r in sibling_events(input.history) {
            self.events.push(r);
        }
        Ok(())
    }

    fn finish(self: Box<Self>, _: &Whole<'_>, out: &mut Findings) {
        self.events.sweep(DEFAULT_WINDOW_SECONDS, out);
    }
}

/// What a key's kept revisions share while its object stays the same: one
/// per generation (another whenever one of these changes), which each of
/// its events refers to, so that texts are not kept once per event.
struct Identity {
    create_revision: Revision,
    key: Span,
    name: Option<Span>,
    uid: Option<Span>,
    owner_name: Option<Span>,
    owner_uid: Option<Span>,
    creation_timestamp: Option<Span>,
    deletion_timestamp: Option<Span>,
    resource: Option<Name>,
    kind: Option<Name>,
    namespace: Option<Name>,
    owner_kind: Option<Name>,
    generate_name: Option<Name>,
    node: Option<Name>,
    managers: Option<Name>,
}

/// What the sweep reads of one kept revision besides its [`Identity`].
/// One is kept for every generation start, tombstone and change of
/// liveness or desired count of every owned object until the sweep, so it
/// is small: 64 bytes.
struct Event {
    mod_revision: Revision,
    desired: Option<i64>,
    identity: u32,
    /// The spec hash, hex (shared with the key's previous event when equal).
    spec_hash: Option<Span>,
    phase: Option<Name>,
    deleted: bool,
}

/// The kept revisions, in the order kept.
#[derive(Default)]
struct Events {
    items: Chunked<Event>,
    identities: Chunked<Identity>,
    texts: Texts,
    names: Interner,
}

impl Events {
    fn push(&mut self, r: &ObjectRevision) {
        let f = &r.facts;
        let spec_hash = f.spec_hash.as_deref().map(hex);
        // What the key's previous event (keys come one at a time, so the
        // last event kept, when of this key) has that this one can share.
        let (same_identity, same_spec) = match self.items.len().checked_sub(1) {
            Some(last) => {
                let p = self.get(last as u32);
                let mine = p.key() == r.key;
                (
                    (mine && p.same_identity(r)).then_some(p.e.identity),
                    (mine && p.text(p.e.spec_hash) == spec_hash.as_deref()).then_some(p.e.spec_hash),
                )
            }
            None => (None, None),
        };
        let identity = match same_identity {
            Some(identity) => identity,
            None => {
                let texts = &mut self.texts;
                let mut text = |s: Option<&str>| s.map(|s| texts.push(s));
                let identity = Identity {
                    create_revision: r.create_revision,
                    key: text(Some(&r.key)).expect("a key"),
                    name: text(r.name.as_deref()),
                    uid: text(r.uid.as_deref()),
                    owner_name: text(f.owner_name.as_deref()),
                    owner_uid: text(f.owner_uid.as_deref()),
                    creation_timestamp: text(f.creation_timestamp.as_deref()),
                    deletion_timestamp: text(f.deletion_timestamp.as_deref()),
                    resource: self.names.option(r.resource.as_deref()),
                    kind: self.names.option(r.kind.as_deref()),
                    namespace: self.names.option(r.namespace.as_deref()),
                    owner_kind: self.names.option(f.owner_kind.as_deref()),
                    generate_name: self.names.option(f.generate_name.as_deref()),
                    node: self.names.option(f.node.as_deref()),
                    managers: self.names.option(f.managers.as_deref()),
                };
                self.identities.push(identity)
            }
        };
        let spec_hash = match same_spec {
            Some(span) => span,
            None => spec_hash.map(|h| self.texts.push(&h)),
        };
        let event = Event {
            mod_revision: r.mod_revision,
            desired: f.desired,
            identity,
            spec_hash,
            phase: self.names.option(f.phase.as_deref()),
            deleted: r.deleted,
        };
        self.items.push(event);
    }

    fn get(&self, i: u32) -> Ev<'_> {
        let e = self.items.get(i);
        Ev {
            e,
            i: self.identities.get(e.identity),
            texts: &self.texts,
        }
    }

    /// Sweeps every kept revision in revision order.
    fn sweep(&self, window_seconds: i64, out: &mut Findings) {
        let mut order: Vec<u32> = (0..self.items.len() as u32).collect();
        order.sort_by_key(|&i| self.items.get(i).mod_revision);
        let mut sweep = Sweep::new(window_seconds, self);
        for i in order {
            sweep.push(i, out);
        }
    }
}

/// One kept revision as the sweep reads it.
#[derive(Clone, Copy)]
struct Ev<'a> {
    e: &'a Event,
    i: &'a Identity,
    texts: &'a Texts,
}

impl<'a> Ev<'a> {
    fn text(&self, span: Option<Span>) -> Option<&'a str> {
        span.map(|s| self.texts.get(s))
    }

    fn key(&self) -> &'a str {
        self.texts.get(self.i.key)
    }

    /// Whether `r` (of the same key) has this event's [`Identity`].
    fn same_identity(&self, r: &ObjectRevision) -> bool {
        let (i, f) = (self.i, &r.facts);
        let same = |n: &Option<Name>, o: &Option<String>| n.as_deref() == o.as_deref();
        i.create_revision == r.create_revision
            && self.text(i.name) == r.name.as_deref()
            && self.text(i.uid) == r.uid.as_deref()
            && self.text(i.owner_name) == f.owner_name.as_deref()
            && self.text(i.owner_uid) == f.owner_uid.as_deref()
            && self.text(i.creation_timestamp) == f.creation_timestamp.as_deref()
            && self.text(i.deletion_timestamp) == f.deletion_timestamp.as_deref()
            && same(&i.resource, &r.resource)
            && same(&i.kind, &r.kind)
            && same(&i.namespace, &r.namespace)
            && same(&i.owner_kind, &f.owner_kind)
            && same(&i.generate_name, &f.generate_name)
            && same(&i.node, &f.node)
            && same(&i.managers, &f.managers)
    }

    fn is_create(&self) -> bool {
        !self.e.deleted && self.e.mod_revision == self.i.create_revision
    }

    /// Terminating (deletionTimestamp set) and finished (phase Succeeded or
    /// Failed) objects do not count as live.
    fn is_live(&self) -> bool {
        self.i.deletion_timestamp.is_none() && !matches!(self.e.phase.as_deref(), Some("Succeeded" | "Failed"))
    }

    /// `Kind namespace/name`, or the key.
    fn object(&self) -> String {
        match (self.i.kind.as_deref(), self.text(self.i.name)) {
            (Some(kind), Some(name)) => match self.i.namespace.as_deref() {
                Some(ns) => format!("{kind} {ns}/{name}"),
                None => format!("{kind} {name}"),
            },
            _ => self.key().to_string(),
        }
    }

    /// The siblings it counts among, if any.
    fn group(&self) -> Option<Group<'a>> {
        let i = self.i;
        if i.owner_uid.is_none() && i.generate_name.is_none() {
            return None;
        }
        let by = match i.owner_kind.as_deref() {
            Some("DaemonSet") => By::Node(i.node.as_deref()?),
            _ => By::Template(
                i.generate_name.as_deref().unwrap_or_default(),
                self.text(self.e.spec_hash).unwrap_or_default(),
            ),
        };
        Some(Group {
            namespace: i.namespace.as_deref().unwrap_or_default(),
            resource: i.resource.as_deref().unwrap_or_default(),
            owner_uid: self.text(i.owner_uid).unwrap_or_default(),
            by,
        })
    }
}

/// Default window for siblings of owners with no known desired count.
pub const DEFAULT_WINDOW_SECONDS: i64 = 60;

/// Siblings that count toward one owner's desired number.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
struct Group<'a> {
    namespace: &'a str,
    resource: &'a str,
    owner_uid: &'a str,
    by: By<'a>,
}

/// What the siblings of a group share besides their owner.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum By<'a> {
    /// A DaemonSet's pods: the node.
    Node(&'a str),
    /// generateName and spec hash (hex) at creation.
    Template(&'a str, &'a str),
}

impl Group<'_> {
    /// How a finding names it.
    fn identity(&self) -> String {
        match self.by {
            By::Node(node) => format!("node {node}"),
            By::Template(generate_name, spec) => format!("{generate_name} {spec}"),
        }
    }
}

/// A group's live members (events that added them) and the event that
/// names the group.
struct Members {
    named_by: u32,
    live: Vec<u32>,
}

/// The sweep's state across the history, revision by revision. Members are
/// the events that added them and groups are found by hashing what the
/// events hold, so nothing is copied; a group is dropped once it has no
/// member left.
struct Sweep<'a> {
    window: i64,
    events: &'a Events,
    hasher: std::collections::hash_map::RandomState,
    /// Desired counts by owner UID.
    desired: HashMap<&'a str, i64>,
    groups: Chunked<Members>,
    /// Group ids, by their group.
    by_group: HashTable<u32>,
    /// (member event, group id), by the member's key.
    member_of: HashTable<(u32, u32)>,
}

impl<'a> Sweep<'a> {
    fn new(window_seconds: i64, events: &'a Events) -> Sweep<'a> {
        Sweep {
            window: window_seconds,
            events,
            hasher: Default::default(),
            desired: HashMap::new(),
            groups: Chunked::default(),
            by_group: HashTable::new(),
            member_of: HashTable::new(),
        }
    }

    fn group_of(&self, id: u32) -> Group<'a> {
        let named_by = self.groups.get(id).named_by;
        self.events.get(named_by).group().expect("a group's events have one")
    }

    /// The id of `group`, when it has live members.
    fn find_group(&self, group: &Group) -> Option<u32> {
        self.by_group
            .find(self.hasher.hash_one(group), |&id| self.group_of(id) == *group)
            .copied()
    }

    /// The group `key` is a live member of.
    fn membership(&self, key: &str) -> Option<(u32, u32)> {
        let events = self.events;
        self.member_of
            .find(self.hasher.hash_one(key), |&(m, _)| events.get(m).key() == key)
            .copied()
    }

    fn remove(&mut self, key: &str) {
        let events = self.events;
        let Ok(entry) = self
            .member_of
            .find_entry(self.hasher.hash_one(key), |&(m, _)| events.get(m).key() == key)
        else {
            return;
        };
        let ((_, id), _) = entry.remove();
        let members = self.groups.get_mut(id);
        members.live.retain(|&m| events.get(m).key() != key);
        if members.live.is_empty() {
            members.live = Vec::new();
            let group = self.group_of(id);
            let hash = self.hasher.hash_one(group);
            if let Ok(entry) = self.by_group.find_entry(hash, |&g| g == id) {
                entry.remove();
            }
        }
    }

    /// Feeds the next event (in revision order across all keys); a create
    /// with too many live siblings is a finding, into `out`.
    fn push(&mut self, i: u32, out: &mut Findings) {
        let r = self.events.get(i);
        if let (Some(d), Some(uid)) = (r.e.desired, r.text(r.i.uid)) {
            self.desired.insert(uid, d);
        }
        if r.e.deleted {
            self.remove(r.key());
            return;
        }
        if !r.is_create() {
            let member = self.membership(r.key()).is_some();
            if member && !r.is_live() {
                self.remove(r.key());
            } else if !member && r.is_live() {
                // History starts mid-generation: count it, judge nothing.
                if let Some(g) = r.group() {
                    self.add(g, i);
                }
            }
            return;
        }
        let Some(group) = r.group() else { return };
        self.remove(r.key());
        if let Some(id) = self.find_group(&group) {
            if let Some(finding) = self.judge(&group, r, &self.groups.get(id).live) {
                out.push(finding);
            }
        }
        if r.is_live() {
            self.add(group, i);
        }
    }

    fn add(&mut self, group: Group<'a>, i: u32) {
        let id = match self.find_group(&group) {
            Some(id) => id,
            None => {
                let id = self.groups.push(Members {
                    named_by: i,
                    live: Vec::new(),
                });
                let (events, groups, hasher) = (self.events, &self.groups, &self.hasher);
                self.by_group.insert_unique(hasher.hash_one(group), id, |&g| {
                    let named_by = groups.get(g).named_by;
                    hasher.hash_one(events.get(named_by).group().expect("a group's events have one"))
                });
                id
            }
        };
        self.groups.get_mut(id).live.push(i);
        let (events, hasher) = (self.events, &self.hasher);
        let key = events.get(i).key();
        self.member_of
            .insert_unique(hasher.hash_one(key), (i, id), |&(m, _)| hasher.hash_one(events.get(m).key()));
    }

    fn judge(&self, group: &Group, r: Ev, live: &[u32]) -> Option<Finding> {
        if live.is_empty() {
            return None;
        }
        let e = r.i;
        let owner = match (e.owner_kind.as_deref(), r.text(e.owner_name)) {
            (Some(k), Some(n)) => format!(
                "{k} {}{n}",
                e.namespace.as_deref().map(|ns| format!("{ns}/")).unwrap_or_default()
            ),
            _ => "no owner".into(),
        };
        let daemon = e.owner_kind.as_deref() == Some("DaemonSet");
        let desired = r.text(e.owner_uid).and_then(|u| self.desired.get(u)).copied();
        let live: Vec<Ev> = live.iter().map(|&m| self.events.get(m)).collect();
        let (severity, why, siblings): (Severity, String, Vec<Ev>) = if daemon {
            (
                Severity::Medium,
                format!("{owner} already had a live pod on {}", e.node.as_deref().unwrap_or("-")),
                live,
            )
        } else if let Some(d) = desired.filter(|_| {
            matches!(
                e.owner_kind.as_deref(),
                Some("ReplicaSet" | "ReplicationController" | "StatefulSet" | "Job")
            )
        }) {
            if (live.len() as i64) < d {
                return None;
            }
            (Severity::Medium, format!("{owner} already had {} of {d} live", live.len()), live)
        } else {
            let created = r.text(e.creation_timestamp);
            let close: Vec<Ev> = live
                .into_iter()
                .filter(|m| {
                    seconds_between(m.text(m.i.creation_timestamp), created).is_some_and(|s| s.abs() <= self.window)
                })
                .collect();
            if close.is_empty() {
                return None;
            }
            (
                Severity::Low,
                format!("{} identical sibling(s) of {owner} created within {} s", close.len(), self.window),
                close,
            )
        };
        // A finding names a bounded sample: a thousand replicas created
        // together would otherwise each list the other 999.
        let more = siblings.len().saturating_sub(SIBLINGS_SHOWN);
        let shown = &siblings[..siblings.len() - more];
        let mut names = shown.iter().map(|m| m.text(m.i.name).unwrap_or_default()).collect::<Vec<_>>().join(", ");
        if more > 0 {
            names.push_str(&format!(" and {more} more"));
        }
        let mut keys = vec![r.key().to_string()];
        keys.extend(shown.iter().map(|m| m.key().to_string()));
        Some(Finding {
            detector: NAME,
            severity,
            keys,
            revisions: vec![e.create_revision],
            summary: format!(
                "{} created at revision {} while {} ({})",
                r.object(),
                e.create_revision,
                why,
                names
            ),
            details: serde_json::json!({
                "object": r.object(), "uid": r.text(e.uid), "created_at": r.text(e.creation_timestamp), "create_revision": e.create_revision,
                "managers": e.managers.as_deref(), "owner": {"kind": e.owner_kind.as_deref(), "name": r.text(e.owner_name), "uid": r.text(e.owner_uid)},
                "desired": desired, "generate_name": e.generate_name.as_deref(), "node": e.node.as_deref(), "group": group.identity(),
                "live_sibling_count": siblings.len(),
                "live_siblings": shown.iter().map(|m| serde_json::json!({
                    "key": m.key(), "uid": m.text(m.i.uid), "created_at": m.text(m.i.creation_timestamp), "create_revision": m.i.create_revision})).collect::<Vec<_>>(),
            }),
        })
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
            mod_revision: Revision(n),
            create_revision: Revision(n),
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
            mod_revision: Revision(n),
            create_revision: Revision(n),
            ..Default::default()
        }
    }

    fn run(revs: &[ObjectRevision]) -> Vec<Finding> {
        let mut events = Events::default();
        revs.iter().for_each(|r| events.push(r));
        Findings::of(|out| events.sweep(DEFAULT_WINDOW_SECONDS, out))
    }

    #[test]
    fn a_second_job_pod_is_excess() {
        let f = run(&[
            owner("job", "Job", 1, 1),
            pod("a", 2, "Job", "job"),
            pod("b", 3, "Job", "job"),
        ]);
        assert_eq!(f.len(), 1);
        assert_eq!(f[0].revisions, vec![Revision(3)]);
        assert!(
            f[0].summary.contains("already had 1 of 1 live (a)"),
            "{}",
            f[0].summary
        );
    }

    #[test]
    fn a_finding_names_a_bounded_sample_of_many_siblings() {
        let mut revs = vec![owner("rs", "ReplicaSet", 1, 1)];
        revs.extend((0..25).map(|i| pod(&format!("p{i:02}"), 2 + i, "ReplicaSet", "rs")));
        let f = run(&revs);
        assert_eq!(f.len(), 24, "every pod after the first is excess");
        let last = f.iter().find(|f| f.revisions == vec![Revision(26)]).expect("the last pod's finding");
        assert_eq!(last.keys.len(), 1 + SIBLINGS_SHOWN);
        assert!(last.summary.contains("already had 24 of 1 live"), "{}", last.summary);
        assert!(last.summary.ends_with(" and 14 more)"), "{}", last.summary);
        assert_eq!(last.details["live_sibling_count"], 24);
        assert_eq!(last.details["live_siblings"].as_array().map(Vec::len), Some(SIBLINGS_SHOWN));
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
            mod_revision: Revision(5),
            create_revision: Revision(1),
            ..rs(2, 5)
        });
        revs.push(ObjectRevision {
            key: "/registry/pods/ns/c".into(),
            mod_revision: Revision(8),
            create_revision: Revision(4),
            deleted: true,
            ..Default::default()
        });
        assert!(run(&revs).is_empty());
        revs.push(pod("d", 9, "ReplicaSet", "rs"));
        assert_eq!(run(&revs).len(), 1, "a third pod while at 2 of 2");
    }

    #[test]
    fn a_keys_events_share_what_does_not_change() {
        assert_eq!(std::mem::size_of::<Event>(), 64);
        let created = pod("a.v1", 2, "Job", "job");
        let mut failed = pod("a.v1", 3, "Job", "job");
        failed.create_revision = Revision(2);
        failed.facts.phase = Some("Failed".into());
        let mut terminating = ObjectRevision {
            mod_revision: Revision(4),
            ..failed.clone()
        };
        terminating.facts.deletion_timestamp = Some("2026-11-29T08:01:00Z".into());
        let mut events = Events::default();
        for r in [&created, &failed, &terminating, &pod("b.v1", 5, "Job", "job")] {
            events.push(r);
        }
        assert_eq!(events.items.len(), 4);
        assert_eq!(events.identities.len(), 3, "a, a terminating, b");
        let (first, second) = (events.get(0), events.get(1));
        assert_eq!(first.e.identity, second.e.identity);
        assert_eq!(first.e.spec_hash, second.e.spec_hash, "one copy of an unchanged spec hash");
        assert!(first.is_live() && !second.is_live());
        assert_eq!(events.get(2).text(events.get(2).i.deletion_timestamp), Some("2026-11-29T08:01:00Z"));
        assert_eq!(events.get(3).key(), "/registry/pods/ns/b.v1");
        assert_ne!(events.get(3).e.spec_hash, first.e.spec_hash, "another key's hash is its own");
    }

    #[test]
    fn terminating_and_finished_pods_do_not_count() {
        let mut failed = pod("a", 3, "Job", "job");
        failed.facts.phase = Some("Failed".into());
        failed.create_revision = Revision(2);
        let revs = [
            owner("job", "Job", 1, 1),
            pod("a", 2, "Job", "job"),
            failed,
            pod("b", 4, "Job", "job"),
        ];
        assert!(run(&revs).is_empty());
    }
}
