//! The objects of one cluster by identity, gathered key by key for the
//! lifecycle detectors (stuck-deletion, dangling-owner, owner-cycle): each
//! key generation's kind, name and UID, when it was created and deleted,
//! and for the objects live at the newest stored revision, their deletion
//! state, finalizers and owners.

use crate::store::object::ObjectRevision;
use serde::Deserialize;
use std::collections::{HashMap, HashSet};

/// One key generation (a create up to its delete).
#[derive(Clone, Debug)]
pub struct Generation {
    pub key: String,
    pub group: String,
    pub resource: String,
    pub kind: Option<String>,
    pub namespace: Option<String>,
    pub name: Option<String>,
    pub uid: Option<String>,
    /// Its create revision (or first stored revision).
    pub created: i64,
    /// The revision of its tombstone, if it was deleted.
    pub deleted: Option<i64>,
    /// `Kind ns/name`, or the key.
    pub object: String,
    /// Set when the generation is live at the newest stored revision.
    pub live: Option<Live>,
}

/// What the lifecycle detectors read of a live object.
#[derive(Clone, Debug, Default)]
pub struct Live {
    /// Its newest revision.
    pub revision: i64,
    pub deletion_timestamp: Option<String>,
    pub finalizers: Vec<Finalizer>,
    pub owners: Vec<OwnerRef>,
}

/// A finalizer and the field managers that own it.
#[derive(Clone, Debug, Default, Deserialize, PartialEq, Eq)]
pub struct Finalizer {
    pub name: String,
    #[serde(default)]
    pub managers: Vec<String>,
}

/// One ownerReference of a live object.
#[derive(Clone, Debug, Default, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct OwnerRef {
    pub api_version: String,
    pub kind: String,
    pub name: String,
    pub uid: String,
    #[serde(default)]
    pub controller: bool,
    /// The revision since which the object has carried it without a break.
    #[serde(skip)]
    pub since: i64,
}

impl OwnerRef {
    /// The owner's API group (`apps/v1` → `apps`, `v1` → the core group "").
    pub fn group(&self) -> &str {
        self.api_version.rsplit_once('/').map_or("", |(g, _)| g)
    }
}

/// (group, kind, namespace, name): how an ownerReference finds its owner.
type Identity = (String, String, Option<String>, String);

/// Every generation, with the indexes the detectors look owners up by.
#[derive(Debug, Default)]
pub struct Objects {
    pub generations: Vec<Generation>,
    by_uid: HashMap<String, usize>,
    by_identity: HashMap<Identity, Vec<usize>>,
    /// (group, kind) of every object stored.
    kinds: HashSet<(String, String)>,
    /// (group, namespace, name) of live keys whose kind is unknown (their
    /// value could not be decoded): an owner there cannot be judged.
    unknown: HashSet<(String, Option<String>, String)>,
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
        let group = last.group.clone().unwrap_or_default();
        let live = match newest && !last.deleted {
            true => Some(Live {
                revision: last.mod_revision,
                deletion_timestamp: last.facts.deletion_timestamp.clone(),
                finalizers: parse(last.facts.finalizers.as_deref(), "finalizers", last)?,
                owners: owners_since(rows)?,
            }),
            false => None,
        };
        let g = Generation {
            key: last.key.clone(),
            group,
            resource: last.resource.clone().unwrap_or_default(),
            kind: content.kind.clone(),
            namespace: content.namespace.clone(),
            name: content.name.clone(),
            uid: content.uid.clone(),
            created: rows[0].create_revision.max(0),
            deleted: last.deleted.then_some(last.mod_revision),
            object: content.object(),
            live,
        };
        let i = self.generations.len();
        if let Some(uid) = &g.uid {
            self.by_uid.insert(uid.clone(), i);
        }
        match (&g.kind, &g.name) {
            (Some(kind), Some(name)) => {
                self.kinds.insert((g.group.clone(), kind.clone()));
                self.by_identity
                    .entry((g.group.clone(), kind.clone(), g.namespace.clone(), name.clone()))
                    .or_default()
                    .push(i);
            }
            (None, Some(name)) if g.live.is_some() => {
                self.unknown
                    .insert((g.group.clone(), g.namespace.clone(), name.clone()));
            }
            _ => {}
        }
        self.generations.push(g);
        Ok(())
    }

    /// The live objects at the newest stored revision.
    pub fn live(&self) -> impl Iterator<Item = (&Generation, &Live)> {
        self.generations
            .iter()
            .filter_map(|g| g.live.as_ref().map(|l| (g, l)))
    }

    /// The newest generation with this UID.
    pub fn by_uid(&self, uid: &str) -> Option<&Generation> {
        self.by_uid.get(uid).map(|&i| &self.generations[i])
    }

    /// The generations an ownerReference of an object in `namespace` may
    /// name: its kind and name in that namespace, or cluster-scoped.
    pub fn candidates(&self, owner: &OwnerRef, namespace: Option<&str>) -> Vec<&Generation> {
        let key = |ns: Option<&str>| {
            (
                owner.group().to_string(),
                owner.kind.clone(),
                ns.map(str::to_string),
                owner.name.clone(),
            )
        };
        let mut ids: Vec<usize> = Vec::new();
        for ns in [namespace, None] {
            ids.extend(self.by_identity.get(&key(ns)).into_iter().flatten());
            if ns.is_none() {
                break;
            }
        }
        ids.iter().map(|&i| &self.generations[i]).collect()
    }

    /// Whether anything of this kind is stored: an owner of a kind never
    /// recorded (left out by the resource filter) cannot be judged.
    pub fn knows_kind(&self, group: &str, kind: &str) -> bool {
        self.kinds.contains(&(group.to_string(), kind.to_string()))
    }

    /// Whether a live key of `group` at this name holds a value whose kind is
    /// unknown (undecodable or encrypted).
    pub fn unknown_at(&self, group: &str, namespace: Option<&str>, name: &str) -> bool {
        [namespace, None].iter().any(|ns| {
            self.unknown
                .contains(&(group.to_string(), ns.map(str::to_string), name.to_string()))
        })
    }
}

/// The newest revision's ownerReferences, each with the revision since
/// which the generation has carried it (by UID) without a break.
fn owners_since(rows: &[ObjectRevision]) -> Result<Vec<OwnerRef>, String> {
    let content: Vec<&ObjectRevision> = rows.iter().filter(|r| !r.deleted).collect();
    let Some(last) = content.last() else {
        return Ok(Vec::new());
    };
    let mut owners: Vec<OwnerRef> = parse(last.facts.owner_refs.as_deref(), "owner_refs", last)?;
    for owner in &mut owners {
        owner.since = last.mod_revision;
        for r in content.iter().rev() {
            let refs: Vec<OwnerRef> = parse(r.facts.owner_refs.as_deref(), "owner_refs", r)?;
            if !refs.iter().any(|o| o.uid == owner.uid) {
                break;
            }
            owner.since = r.mod_revision;
        }
    }
    Ok(owners)
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
            mod_revision: revision,
            create_revision: created,
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
            mod_revision: revision,
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
        assert_eq!(objects.generations.len(), 3);
        assert_eq!(objects.generations[0].deleted, Some(3));
        assert!(objects.generations[0].live.is_none());
        assert!(objects.generations[1].live.is_some());
        let (_, pod) = objects
            .live()
            .find(|(g, _)| g.kind.as_deref() == Some("Pod"))
            .unwrap();
        assert_eq!(pod.owners.len(), 1);
        assert_eq!(pod.owners[0].since, 6);
        let owner = &pod.owners[0];
        let found = objects.candidates(owner, Some("shop"));
        assert_eq!(found.len(), 2, "both generations of shop/a");
        assert_eq!(objects.by_uid("u2").unwrap().created, 4);
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
