//! Drift between two points of a cluster's history: objects added, removed,
//! recreated (same key, new UID) and changed, with each changed field's old
//! and new value and the managers that wrote it.

use crate::canon::change::deepest_paths;
use crate::canon::managed::{attribute, entries};
use crate::canon::path::{FieldPath, MANAGED_FIELDS};
use crate::store::{FieldChange, LiveObject, ObjectFilter};
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
    pub revision_a: Option<i64>,
    pub revision_b: Option<i64>,
    /// For changed objects: each changed field.
    pub fields: Vec<FieldChange>,
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

/// The whole comparison.
#[derive(Clone, Debug, Default, Serialize)]
pub struct DriftReport {
    pub summary: BTreeMap<String, Counts>,
    pub objects: Vec<ObjectDrift>,
}

/// Compares the live sets `a` and `b` (each sorted by key). `value_at(object,
/// path)` gives a field's value, `<redacted>` for sensitive ones.
pub fn compare(
    a: &[LiveObject],
    b: &[LiveObject],
    filter: &ObjectFilter,
    value_at: &mut dyn FnMut(&LiveObject, &FieldPath) -> Value,
) -> DriftReport {
    let a: BTreeMap<&str, &LiveObject> = a
        .iter()
        .filter(|o| filter.matches(&o.key, o.namespace.as_deref(), o.resource.as_deref()))
        .map(|o| (o.key.as_str(), o))
        .collect();
    let b: BTreeMap<&str, &LiveObject> = b
        .iter()
        .filter(|o| filter.matches(&o.key, o.namespace.as_deref(), o.resource.as_deref()))
        .map(|o| (o.key.as_str(), o))
        .collect();
    let mut report = DriftReport::default();
    let keys: std::collections::BTreeSet<&str> = a.keys().chain(b.keys()).copied().collect();
    for key in keys {
        let (old, new) = (a.get(key).copied(), b.get(key).copied());
        let either = new.or(old).expect("key from one side");
        let change = match (old, new) {
            (None, Some(_)) => Drift::Added,
            (Some(_), None) => Drift::Removed,
            (Some(o), Some(n)) if o.uid != n.uid => Drift::Recreated,
            (Some(o), Some(n))
                if o.hash_key.is_some() && n.hash_key.is_some() && o.hash_key != n.hash_key =>
            {
                Drift::NotComparable
            }
            (Some(o), Some(n)) if o.semantic_sha256 != n.semantic_sha256 => Drift::Changed,
            _ => continue,
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
        let counts = report
            .summary
            .entry(either.resource.clone().unwrap_or_else(|| "-".into()))
            .or_default();
        match change {
            Drift::Added => counts.added += 1,
            Drift::Removed => counts.removed += 1,
            Drift::Recreated => counts.recreated += 1,
            Drift::Changed => counts.changed += 1,
            Drift::NotComparable => counts.not_comparable += 1,
        }
        report.objects.push(ObjectDrift {
            change,
            key: key.to_string(),
            resource: either.resource.clone(),
            kind: either.kind.clone(),
            namespace: either.namespace.clone(),
            name: either.name.clone(),
            uid_a: old.and_then(|o| o.uid.clone()),
            uid_b: new.and_then(|n| n.uid.clone()),
            revision_a: old.map(|o| o.mod_revision),
            revision_b: new.map(|n| n.mod_revision),
            fields,
        });
    }
    report
}
