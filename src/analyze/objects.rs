//! The objects of one cluster by identity, gathered key by key for the
//! lifecycle detectors (stuck-deletion, dangling-owner, owner-cycle): each
//! key generation's kind, name and UID, when it was created and deleted,
//! and for the objects live at the newest stored revision, their deletion
//! state, finalizers and owners.
//!
//! Held whole for a cluster (every key generation), so it is kept compact
//! (about 400 bytes an object, no allocation of its own): texts are packed
//! into blocks and items into chunks ([`super::arena`]), names that repeat
//! (groups, resources, kinds, namespaces, API versions, finalizers,
//! managers) are interned, and the lookups by UID and by identity are hash
//! tables of generation indexes compared against the generations
//! themselves. Detectors read it through views ([`Generation`], [`Live`],
//! [`OwnerRef`], [`Finalizer`]).

use super::arena::{Chunked, Span, Texts};
use super::names::{Interner, Name};
use crate::source::Revision;
use crate::store::object::ObjectRevision;
use hashbrown::HashTable;
use serde::Deserialize;
use std::collections::HashSet;
use std::hash::BuildHasher;

/// One key generation as held.
struct Stored {
    key: Span,
    group: Name,
    resource: Name,
    kind: Option<Name>,
    namespace: Option<Name>,
    name: Option<Span>,
    uid: Option<Span>,
    created: Revision,
    deleted: Option<Revision>,
    /// Index into `Objects::live` when live at the newest stored revision.
    live: Option<u32>,
}

impl Stored {
    fn name<'a>(&self, texts: &'a Texts) -> Option<&'a str> {
        self.name.map(|s| texts.get(s))
    }

    fn uid<'a>(&self, texts: &'a Texts) -> Option<&'a str> {
        self.uid.map(|s| texts.get(s))
    }

    fn identity<'a>(&'a self, texts: &'a Texts) -> Option<Identity<'a>> {
        Some((
            &self.group,
            self.kind.as_deref()?,
            self.namespace.as_deref(),
            self.name(texts)?,
        ))
    }
}

/// What is held of a live object.
struct StoredLive {
    revision: Revision,
    deletion_timestamp: Option<Span>,
    /// Its range in `Objects::finalizers`.
    finalizers: (u32, u32),
    /// Its range in `Objects::owners`.
    owners: (u32, u32),
}

struct StoredOwner {
    api_version: Name,
    kind: Name,
    name: Span,
    uid: Span,
    controller: bool,
    since: Revision,
}

struct StoredFinalizer {
    name: Name,
    /// Its range in `Objects::managers`.
    managers: (u32, u32),
}

/// A finalizer as `revisions.finalizers` stores it.
#[derive(Deserialize)]
struct FinalizerColumn {
    name: String,
    #[serde(default)]
    managers: Vec<String>,
}

/// An ownerReference as `revisions.owner_refs` stores it.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct OwnerColumn {
    api_version: String,
    kind: String,
    name: String,
    uid: String,
    #[serde(default)]
    controller: bool,
}

/// Every generation, with the indexes the detectors look owners up by.
#[derive(Default)]
pub struct Objects {
    generations: Chunked<Stored>,
    live: Chunked<StoredLive>,
    owners: Chunked<StoredOwner>,
    finalizers: Chunked<StoredFinalizer>,
    managers: Chunked<Name>,
    texts: Texts,
    names: Interner,
    /// Generation indexes by UID (the newest generation of each).
    by_uid: HashTable<u32>,
    /// Generation indexes by (group, kind, namespace, name): how an
    /// ownerReference finds its owner; one entry per generation.
    by_identity: HashTable<u32>,
    hasher: std::collections::hash_map::RandomState,
    /// (group, kind) of every object stored.
    kinds: HashSet<(Name, Name)>,
    /// (group, namespace, name) of live keys whose kind is unknown (their
    /// value could not be decoded): an owner there cannot be judged.
    unknown: HashSet<(Name, Option<Name>, Box<str>)>,
}

impl std::fmt::Debug for Objects {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Objects")
            .field("generations", &self.generations.len())
            .finish_non_exhaustive()
    }
}

/// What an ownerReference names: (group, kind, namespace, name).
type Identity<'a> = (&'a str, &'a str, Option<&'a str>, &'a str);

/// One key generation (a create up to its delete).
#[derive(Clone, Copy)]
pub struct Generation<'a> {
    objects: &'a Objects,
    stored: &'a Stored,
}

impl<'a> Generation<'a> {
    pub fn key(&self) -> &'a str {
        self.objects.texts.get(self.stored.key)
    }

    /// The resource's API group ("" for the core group).
    pub fn group(&self) -> &'a str {
        &self.stored.group
    }

    pub fn resource(&self) -> &'a str {
        &self.stored.resource
    }

    pub fn kind(&self) -> Option<&'a str> {
        self.stored.kind.as_deref()
    }

    pub fn namespace(&self) -> Option<&'a str> {
        self.stored.namespace.as_deref()
    }

    pub fn name(&self) -> Option<&'a str> {
        self.stored.name(&self.objects.texts)
    }

    pub fn uid(&self) -> Option<&'a str> {
        self.stored.uid(&self.objects.texts)
    }

    /// Its create revision (or first stored revision).
    pub fn created(&self) -> Revision {
        self.stored.created
    }

    /// The revision of its tombstone, if it was deleted.
    pub fn deleted(&self) -> Option<Revision> {
        self.stored.deleted
    }

    /// What it holds when live at the newest stored revision.
    pub fn live(&self) -> Option<Live<'a>> {
        self.stored.live.map(|i| Live {
            objects: self.objects,
            stored: self.objects.live.get(i),
        })
    }

    /// `Kind ns/name`, or the key.
    pub fn object(&self) -> String {
        match (self.kind(), self.name()) {
            (Some(kind), Some(name)) => match self.namespace() {
                Some(ns) => format!("{kind} {ns}/{name}"),
                None => format!("{kind} {name}"),
            },
            _ => self.key().to_string(),
        }
    }

    fn identity(&self) -> Option<Identity<'a>> {
        self.stored.identity(&self.objects.texts)
    }
}

impl std::fmt::Debug for Generation<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Generation")
            .field("key", &self.key())
            .field("uid", &self.uid())
            .field("created", &self.created())
            .field("deleted", &self.deleted())
            .finish_non_exhaustive()
    }
}

/// What the lifecycle detectors read of a live object.
#[derive(Clone, Copy)]
pub struct Live<'a> {
    objects: &'a Objects,
    stored: &'a StoredLive,
}

impl<'a> Live<'a> {
    /// Its newest revision.
    pub fn revision(&self) -> Revision {
        self.stored.revision
    }

    pub fn deletion_timestamp(&self) -> Option<&'a str> {
        self.stored.deletion_timestamp.map(|s| self.objects.texts.get(s))
    }

    pub fn finalizers(&self) -> impl Iterator<Item = Finalizer<'a>> + use<'a> {
        let objects = self.objects;
        range(self.stored.finalizers).map(move |i| Finalizer {
            objects,
            stored: objects.finalizers.get(i),
        })
    }

    pub fn owners(&self) -> impl Iterator<Item = OwnerRef<'a>> + use<'a> {
        let objects = self.objects;
        range(self.stored.owners).map(move |i| OwnerRef {
            objects,
            stored: objects.owners.get(i),
        })
    }
}

fn range((start, len): (u32, u32)) -> std::ops::Range<u32> {
    start..start + len
}

/// A finalizer and the field managers that own it.
#[derive(Clone, Copy)]
pub struct Finalizer<'a> {
    objects: &'a Objects,
    stored: &'a StoredFinalizer,
}

impl<'a> Finalizer<'a> {
    pub fn name(&self) -> &'a str {
        &self.stored.name
    }

    pub fn managers(&self) -> Vec<&'a str> {
        range(self.stored.managers)
            .map(|i| &**self.objects.managers.get(i))
            .collect()
    }
}

/// One ownerReference of a live object.
#[derive(Clone, Copy)]
pub struct OwnerRef<'a> {
    objects: &'a Objects,
    stored: &'a StoredOwner,
}

impl<'a> OwnerRef<'a> {
    pub fn api_version(&self) -> &'a str {
        &self.stored.api_version
    }

    pub fn kind(&self) -> &'a str {
        &self.stored.kind
    }

    pub fn name(&self) -> &'a str {
        self.objects.texts.get(self.stored.name)
    }

    pub fn uid(&self) -> &'a str {
        self.objects.texts.get(self.stored.uid)
    }

    pub fn controller(&self) -> bool {
        self.stored.controller
    }

    /// The revision since which the object has carried it without a break.
    pub fn since(&self) -> Revision {
        self.stored.since
    }

    /// The owner's API group (`apps/v1` → `apps`, `v1` → the core group "").
    pub fn group(&self) -> &'a str {
        self.api_version().rsplit_once('/').map_or("", |(g, _)| g)
    }
}

/// A stored JSON list of `r` (`column` names it): empty when there is none,
/// an error naming the column and revision when it does not parse.
fn parse<T: for<'de> Deserialize<'de>>(
    json: Option<&str>,
    column: &str,
    r: &ObjectRevision,
) -> Result<Vec<T>, String> {
    match json {
        None => Ok(Vec::new()),
        Some(j) => serde_json::from_str(j).map_err(|e| {
            format!(
                "revisions.{column} of {} at revision {}: {e}",
                r.key, r.mod_revision
            )
        }),
    }
}

impl Objects {
    /// Adds one key's history (oldest first); a stored list that does not
    /// parse is an error naming it.
    pub fn push(&mut self, history: &[ObjectRevision]) -> Result<(), String> {
        let Some(newest) = history.last() else {
            return Ok(());
        };
        let mut start = 0;
        while start < history.len() {
            let created = history[start].create_revision;
            let len = history[start..]
                .iter()
                .position(|r| r.create_revision != created || r.deleted)
                .map_or(history.len() - start, |i| {
                    i + usize::from(history[start + i].deleted)
                });
            let rows = &history[start..start + len.max(1)];
            start += len.max(1);
            self.push_generation(rows, std::ptr::eq(rows.last().expect("a row"), newest))?;
        }
        Ok(())
    }

    fn push_generation(&mut self, rows: &[ObjectRevision], newest: bool) -> Result<(), String> {
        let last = rows.last().expect("a row");
        let Some(content) = rows.iter().rev().find(|r| !r.deleted) else {
            return Ok(());
        };
        let live = match newest && !last.deleted {
            true => Some(self.push_live(rows)?),
            false => None,
        };
        let stored = Stored {
            key: self.texts.push(&last.key),
            group: self.names.name(last.group.as_deref().unwrap_or_default()),
            resource: self.names.name(last.resource.as_deref().unwrap_or_default()),
            kind: self.names.option(content.kind.as_deref()),
            namespace: self.names.option(content.namespace.as_deref()),
            name: content.name.as_deref().map(|n| self.texts.push(n)),
            uid: content.uid.as_deref().map(|u| self.texts.push(u)),
            created: rows[0].create_revision.max(Revision(0)),
            deleted: last.deleted.then_some(last.mod_revision),
            live,
        };
        let index = self.generations.push(stored);
        let (gens, texts, hasher) = (&self.generations, &self.texts, &self.hasher);
        let stored = gens.get(index);
        if let Some(uid) = stored.uid(texts) {
            let hash = hasher.hash_one(uid);
            match self
                .by_uid
                .find_mut(hash, |&j| gens.get(j).uid(texts) == Some(uid))
            {
                Some(slot) => *slot = index,
                None => {
                    self.by_uid.insert_unique(hash, index, |&j| {
                        hasher.hash_one(gens.get(j).uid(texts).expect("indexed by its UID"))
                    });
                }
            }
        }
        match (stored.identity(texts), &stored.kind, stored.name(texts)) {
            (Some(identity), Some(kind), _) => {
                self.kinds.insert((stored.group.clone(), kind.clone()));
                self.by_identity
                    .insert_unique(hasher.hash_one(identity), index, |&j| {
                        hasher.hash_one(gens.get(j).identity(texts).expect("indexed by its identity"))
                    });
            }
            (None, _, Some(name)) if stored.live.is_some() => {
                self.unknown
                    .insert((stored.group.clone(), stored.namespace.clone(), name.into()));
            }
            _ => {}
        }
        Ok(())
    }

    /// Holds what the detectors read of the live generation `rows` ends.
    fn push_live(&mut self, rows: &[ObjectRevision]) -> Result<u32, String> {
        let last = rows.last().expect("a row");
        let deletion_timestamp = last
            .facts
            .deletion_timestamp
            .as_deref()
            .map(|t| self.texts.push(t));
        let stored: Vec<FinalizerColumn> = parse(last.facts.finalizers.as_deref(), "finalizers", last)?;
        let first_finalizer = self.finalizers.len();
        for f in &stored {
            let first_manager = self.managers.len();
            for m in &f.managers {
                let m = self.names.name(m);
                self.managers.push(m);
            }
            let finalizer = StoredFinalizer {
                name: self.names.name(&f.name),
                managers: span_of(first_manager, self.managers.len()),
            };
            self.finalizers.push(finalizer);
        }
        let finalizers = span_of(first_finalizer, self.finalizers.len());
        let first_owner = self.owners.len();
        self.push_owners_since(rows)?;
        let owners = span_of(first_owner, self.owners.len());
        Ok(self.live.push(StoredLive {
            revision: last.mod_revision,
            deletion_timestamp,
            finalizers,
            owners,
        }))
    }

    /// Holds the newest revision's ownerReferences, each with the revision
    /// since which the generation has carried it (by UID) without a break.
    fn push_owners_since(&mut self, rows: &[ObjectRevision]) -> Result<(), String> {
        let content: Vec<&ObjectRevision> = rows.iter().filter(|r| !r.deleted).collect();
        let Some(last) = content.last() else {
            return Ok(());
        };
        let owners: Vec<OwnerColumn> = parse(last.facts.owner_refs.as_deref(), "owner_refs", last)?;
        let mut since = vec![last.mod_revision; owners.len()];
        for (owner, since) in owners.iter().zip(&mut since) {
            for r in content.iter().rev() {
                let refs: Vec<OwnerColumn> = parse(r.facts.owner_refs.as_deref(), "owner_refs", r)?;
                if !refs.iter().any(|o| o.uid == owner.uid) {
                    break;
                }
                *since = r.mod_revision;
            }
        }
        for (o, since) in owners.iter().zip(since) {
            let owner = StoredOwner {
                api_version: self.names.name(&o.api_version),
                kind: self.names.name(&o.kind),
                name: self.texts.push(&o.name),
                uid: self.texts.push(&o.uid),
                controller: o.controller,
                since,
            };
            self.owners.push(owner);
        }
        Ok(())
    }

    fn generation(&self, index: u32) -> Generation<'_> {
        Generation {
            objects: self,
            stored: self.generations.get(index),
        }
    }

    /// Every generation, in the order pushed.
    pub fn generations(&self) -> impl Iterator<Item = Generation<'_>> {
        (0..self.generations.len() as u32).map(|i| self.generation(i))
    }

    /// The live objects at the newest stored revision.
    pub fn live(&self) -> impl Iterator<Item = (Generation<'_>, Live<'_>)> {
        self.generations().filter_map(|g| Some((g, g.live()?)))
    }

    /// The newest generation with this UID.
    pub fn by_uid(&self, uid: &str) -> Option<Generation<'_>> {
        let (gens, texts) = (&self.generations, &self.texts);
        self.by_uid
            .find(self.hasher.hash_one(uid), |&j| {
                gens.get(j).uid(texts) == Some(uid)
            })
            .map(|&j| self.generation(j))
    }

    /// The generations an ownerReference of an object in `namespace` may
    /// name, oldest first: its kind and name in that namespace, or
    /// cluster-scoped.
    pub fn candidates(&self, owner: &OwnerRef, namespace: Option<&str>) -> Vec<Generation<'_>> {
        let mut found: Vec<u32> = Vec::new();
        for ns in [namespace, None] {
            let wanted: Identity = (owner.group(), owner.kind(), ns, owner.name());
            found.extend(
                self.by_identity
                    .iter_hash(self.hasher.hash_one(wanted))
                    .copied()
                    .filter(|&j| self.generation(j).identity() == Some(wanted)),
            );
            if ns.is_none() {
                break;
            }
        }
        found.sort_unstable();
        found.into_iter().map(|j| self.generation(j)).collect()
    }

    /// Whether anything of this kind is stored: an owner of a kind never
    /// recorded (left out by the resource filter) cannot be judged.
    pub fn knows_kind(&self, group: &str, kind: &str) -> bool {
        self.kinds.contains(&(Name::from(group), Name::from(kind)))
    }

    /// Whether a live key of `group` at this name holds a value whose kind is
    /// unknown (undecodable or encrypted).
    pub fn unknown_at(&self, group: &str, namespace: Option<&str>, name: &str) -> bool {
        [namespace, None].iter().any(|ns| {
            self.unknown
                .contains(&(Name::from(group), ns.map(Name::from), Box::from(name)))
        })
    }
}

/// The range of items pushed from `first` up to `end`.
fn span_of(first: usize, end: usize) -> (u32, u32) {
    let first = u32::try_from(first).expect("fewer than 2^32 items");
    (first, u32::try_from(end).expect("fewer than 2^32 items") - first)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A revision of `kind` `ns/name` (`ns` empty: cluster-scoped).
    pub(crate) fn rev(
        kind: &str,
        ns: &str,
        name: &str,
        uid: &str,
        revision: i64,
        created: i64,
    ) -> ObjectRevision {
        ObjectRevision {
            key: format!("/registry/{}/{ns}/{name}", kind.to_lowercase()),
            group: Some(String::new()),
            resource: Some(kind.to_lowercase()),
            mod_revision: Revision(revision),
            create_revision: Revision(created),
            kind: Some(kind.into()),
            namespace: (!ns.is_empty()).then(|| ns.to_string()),
            name: Some(name.into()),
            uid: Some(uid.into()),
            ..Default::default()
        }
    }

    pub(crate) fn owned_by(mut r: ObjectRevision, refs: &[(&str, &str, &str, &str)]) -> ObjectRevision {
        let list: Vec<serde_json::Value> = refs
            .iter()
            .map(|(api, kind, name, uid)| serde_json::json!({"apiVersion": api, "kind": kind, "name": name, "uid": uid}))
            .collect();
        r.facts.owner_refs = Some(serde_json::Value::Array(list).to_string());
        r
    }

    pub(crate) fn tombstone(of: &ObjectRevision, revision: i64) -> ObjectRevision {
        ObjectRevision {
            mod_revision: Revision(revision),
            deleted: true,
            kind: None,
            uid: None,
            facts: Default::default(),
            ..of.clone()
        }
    }

    #[test]
    fn generations_and_owner_since() {
        let mut objects = Objects::default();
        let a = rev("ConfigMap", "shop", "a", "u1", 2, 2);
        objects
            .push(&[
                a.clone(),
                tombstone(&a, 3),
                rev("ConfigMap", "shop", "a", "u2", 4, 4),
            ])
            .unwrap();
        let p1 = owned_by(rev("Pod", "shop", "p", "p1", 5, 5), &[]);
        let p2 = owned_by(
            rev("Pod", "shop", "p", "p1", 6, 5),
            &[("v1", "ConfigMap", "a", "u2")],
        );
        let p3 = owned_by(
            rev("Pod", "shop", "p", "p1", 7, 5),
            &[("v1", "ConfigMap", "a", "u2")],
        );
        objects.push(&[p1, p2, p3]).unwrap();
        let generations: Vec<Generation> = objects.generations().collect();
        assert_eq!(generations.len(), 3);
        assert_eq!(generations[0].deleted(), Some(Revision(3)));
        assert!(generations[0].live().is_none());
        assert!(generations[1].live().is_some());
        let (_, pod) = objects.live().find(|(g, _)| g.kind() == Some("Pod")).unwrap();
        let owners: Vec<OwnerRef> = pod.owners().collect();
        assert_eq!(owners.len(), 1);
        assert_eq!(owners[0].since(), Revision(6));
        let found = objects.candidates(&owners[0], Some("shop"));
        assert_eq!(found.len(), 2, "both generations of shop/a");
        assert_eq!(found[0].uid(), Some("u1"), "oldest first");
        assert_eq!(objects.by_uid("u2").unwrap().created(), Revision(4));
        assert_eq!(objects.by_uid("u1").unwrap().deleted(), Some(Revision(3)));
        assert_eq!(pod.revision(), Revision(7));
        assert!(objects.knows_kind("", "ConfigMap"));
        assert!(!objects.knows_kind("apps", "ReplicaSet"));
    }

    #[test]
    fn stored_owner_references_that_do_not_parse_are_named() {
        let mut r = rev("Pod", "ns", "p", "u1", 5, 5);
        r.facts.owner_refs = Some("[{\"kind\": 3}]".into());
        let e = Objects::default().push(&[r]).unwrap_err();
        assert!(e.starts_with("revisions.owner_refs of "), "{e}");
    }
}
