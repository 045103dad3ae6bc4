//! Drift between two points of a cluster's history: objects added, removed,
//! recreated (same key, new UID) and changed, with each changed field's old
//! and new value and the managers that wrote it.

use crate::canon::change::deepest_paths;
use crate::canon::managed::{attribute, entries};
use crate::canon::path::{FieldPath, MANAGED_FIELDS};
use crate::source::Revision;
use crate::store::{FieldChange, LiveIter, LiveObject, ObjectFilter, StoreError};
use serde::Serialize;
use serde_json::Value;
use std::collections::BTreeMap;

/// What happened to one object between the two points.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Drift {
    Added,
    Removed,
    Recreated,
    Changed,
    /// Its keyed hashes (a Secret's) on the two sides are under different
    /// hash keys (`--new-hash-key` between them): whether it changed is
    /// not known.
    NotComparable,
}

impl Drift {
    pub fn as_str(self) -> &'static str {
        match self {
            Drift::Added => "added",
            Drift::Removed => "removed",
            Drift::Recreated => "recreated",
            Drift::Changed => "changed",
            Drift::NotComparable => "not-comparable",
        }
    }
}

/// One object that differs.
#[derive(Clone, Debug, Serialize)]
pub struct ObjectDrift {
    pub change: Drift,
    pub key: String,
    pub resource: Option<String>,
    pub kind: Option<String>,
    pub namespace: Option<String>,
    pub name: Option<String>,
    pub uid_a: Option<String>,
    pub uid_b: Option<String>,
    pub revision_a: Option<Revision>,
    pub revision_b: Option<Revision>,
    /// For changed objects: each changed field.
    pub fields: Vec<FieldChange>,
    /// Who wrote the object as it is at B (a removed object has none),
    /// once `attribute` knows.
    pub written_by_b: Option<crate::store::audit::WrittenBy>,
}

/// Counts per resource.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Counts {
    pub added: usize,
    pub removed: usize,
    pub recreated: usize,
    pub changed: usize,
    pub not_comparable: usize,
}

/// Objects that differ, counted per resource.
pub type Summary = BTreeMap<String, Counts>;

/// Compares the live sets `a` and `b`, each read in key order, one object
/// at a time: `changed` gets each object that differs as it is found, and
/// the counts per resource come back. `value_at(object, path)` gives a
/// field's value, `<redacted>` for sensitive ones.
pub fn compare(
    a: LiveIter<'_>,
    b: LiveIter<'_>,
    filter: &ObjectFilter,
    value_at: &mut dyn FnMut(&LiveObject, &FieldPath) -> Value,
    changed: &mut dyn FnMut(ObjectDrift) -> anyhow::Result<()>,
) -> anyhow::Result<Summary> {
    let kept = |o: &Result<LiveObject, StoreError>| {
        o.as_ref().map_or(true, |o| {
            filter.matches(&o.key, o.namespace.as_deref(), o.resource.as_deref())
        })
    };
    let mut a = a.filter(kept).peekable();
    let mut b = b.filter(kept).peekable();
    let mut summary = Summary::new();
    loop {
        let order = match (a.peek(), b.peek()) {
            (None, None) => break,
            (Some(Err(_)), _) => return Err(a.next().expect("peeked").expect_err("peeked an error").into()),
            (_, Some(Err(_))) => return Err(b.next().expect("peeked").expect_err("peeked an error").into()),
            (Some(Ok(x)), Some(Ok(y))) => x.key.cmp(&y.key),
            (Some(_), None) => std::cmp::Ordering::Less,
            (None, Some(_)) => std::cmp::Ordering::Greater,
        };
        let (old, new) = match order {
            std::cmp::Ordering::Less => (a.next().transpose()?, None),
            std::cmp::Ordering::Greater => (None, b.next().transpose()?),
            std::cmp::Ordering::Equal => (a.next().transpose()?, b.next().transpose()?),
        };
        if let Some(drift) = one(old.as_ref(), new.as_ref(), value_at) {
            let counts = summary
                .entry(drift.resource.clone().unwrap_or_else(|| "-".into()))
                .or_default();
            match drift.change {
                Drift::Added => counts.added += 1,
                Drift::Removed => counts.removed += 1,
                Drift::Recreated => counts.recreated += 1,
                Drift::Changed => counts.changed += 1,
                Drift::NotComparable => counts.not_comparable += 1,
            }
            changed(drift)?;
        }
    }
    Ok(summary)
}

/// How one key differs between the two points, if it does.
fn one(
    old: Option<&LiveObject>,
    new: Option<&LiveObject>,
    value_at: &mut dyn FnMut(&LiveObject, &FieldPath) -> Value,
) -> Option<ObjectDrift> {
    let either = new.or(old)?;
    let change = match (old, new) {
        (None, Some(_)) => Drift::Added,
        (Some(_), None) => Drift::Removed,
        (Some(o), Some(n)) if o.uid != n.uid => Drift::Recreated,
        (Some(o), Some(n)) if o.hash_key.is_some() && n.hash_key.is_some() && o.hash_key != n.hash_key => {
            Drift::NotComparable
        }
        (Some(o), Some(n)) if o.semantic_sha256 != n.semantic_sha256 => Drift::Changed,
        _ => return None,
    };
    let mut fields = Vec::new();
    if let (Drift::Changed, Some(o), Some(n)) = (change, old, new) {
        let mut changed: Vec<FieldPath> = n
            .fields
            .iter()
            .filter(|(p, h)| o.fields.get(*p) != Some(h))
            .map(|(p, _)| p.clone())
            .collect();
        changed.extend(o.fields.keys().filter(|p| !n.fields.contains_key(*p)).cloned());
        changed.sort();
        let changed: Vec<FieldPath> = deepest_paths(&changed)
            .into_iter()
            .filter(|p| p.as_str() != MANAGED_FIELDS)
            .collect();
        let by = attribute(
            &o.managed.as_ref().map(entries).unwrap_or_default(),
            &n.managed.as_ref().map(entries).unwrap_or_default(),
            &changed,
        );
        fields = changed
            .iter()
            .map(|p| FieldChange {
                path: p.clone(),
                old: value_at(o, p),
                new: value_at(n, p),
                managers: by.get(p).cloned().unwrap_or_default(),
            })
            .collect();
    }
    Some(ObjectDrift {
        change,
        key: either.key.clone(),
        resource: either.resource.clone(),
        kind: either.kind.clone(),
        namespace: either.namespace.clone(),
        name: either.name.clone(),
        uid_a: old.and_then(|o| o.uid.clone()),
        uid_b: new.and_then(|n| n.uid.clone()),
        revision_a: old.map(|o| o.mod_revision),
        revision_b: new.map(|n| n.mod_revision),
        fields,
        written_by_b: new.and_then(|n| n.written_by.clone()),
    })
}
