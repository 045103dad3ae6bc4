//! Repeated entries within one object's lists: `metadata.ownerReferences`
//! (same uid, or same apiVersion+kind+name), `metadata.finalizers`, RBAC
//! `subjects` (same kind+name+namespace), and pod-spec lists keyed by name
//! (containers, init and ephemeral containers, volumes, each container's env
//! and named ports), in Pods and in the pod templates of workloads.

use super::path::{FieldPath, Segment};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::BTreeMap;

/// One repeated entry.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Duplicate {
    /// The list, e.g. `metadata.ownerReferences` or
    /// `spec.template.spec.containers[name=web].env`.
    pub path: FieldPath,
    /// What repeats, e.g. `uid 5c3a…` or `name DB_HOST`.
    pub entry: String,
    pub count: usize,
}

fn text<'v>(v: &'v Value, k: &str) -> &'v str {
    v.get(k).and_then(Value::as_str).unwrap_or_default()
}

/// Adds the entries of `items` whose key repeats, with their counts, under
/// `path`; whether there were any. Keys are compared borrowed, and only a
/// repeated one is formatted (`entry`), as is the path: the common list has
/// no repeats. Entries come in the order of their text.
fn repeats<'v, K: Ord>(
    path: impl FnOnce() -> FieldPath,
    items: &'v [Value],
    key_of: impl Fn(&'v Value) -> Option<K>,
    entry: impl Fn(&K) -> String,
    out: &mut Vec<Duplicate>,
) -> bool {
    let mut keys: Vec<K> = items.iter().filter_map(key_of).collect();
    keys.sort_unstable();
    let mut repeated: Vec<(String, usize)> = keys
        .chunk_by(|a, b| a == b)
        .filter(|run| run.len() > 1)
        .map(|run| (entry(&run[0]), run.len()))
        .collect();
    if repeated.is_empty() {
        return false;
    }
    repeated.sort_unstable();
    let path = path();
    out.extend(repeated.into_iter().map(|(entry, count)| Duplicate {
        path: path.clone(),
        entry,
        count,
    }));
    true
}

/// An owner reference's uid, when it has one.
fn uid(r: &Value) -> Option<&str> {
    Some(text(r, "uid")).filter(|u| !u.is_empty())
}

/// What an owner reference refers to: apiVersion, kind and name.
fn reference(r: &Value) -> (&str, &str, &str) {
    (text(r, "apiVersion"), text(r, "kind"), text(r, "name"))
}

/// Who an RBAC subject is: kind, namespace and name.
fn subject(s: &Value) -> (&str, &str, &str) {
    (text(s, "kind"), text(s, "namespace"), text(s, "name"))
}

/// A named entry's name; an unnamed one has none.
fn name_of(v: &Value) -> Option<&str> {
    v.get("name").and_then(Value::as_str).filter(|n| !n.is_empty())
}

fn repeats_by_name(path: impl FnOnce() -> FieldPath, items: Option<&Value>, out: &mut Vec<Duplicate>) {
    if let Some(list) = items.and_then(Value::as_array) {
        repeats(path, list, name_of, |n| format!("name {n}"), out);
    }
}

fn pod_spec(path: &dyn Fn() -> FieldPath, spec: &Value, out: &mut Vec<Duplicate>) {
    for list in ["containers", "initContainers", "ephemeralContainers"] {
        repeats_by_name(|| path().join_field(list), spec.get(list), out);
        for c in spec.get(list).and_then(Value::as_array).into_iter().flatten() {
            let container = || {
                path()
                    .join_field(list)
                    .join(&Segment::Item(vec![("name".into(), text(c, "name").to_string())]))
            };
            repeats_by_name(|| container().join_field("env"), c.get("env"), out);
            repeats_by_name(|| container().join_field("ports"), c.get("ports"), out);
        }
    }
    repeats_by_name(|| path().join_field("volumes"), spec.get("volumes"), out);
}

/// Every repeated entry in `object`.
pub fn duplicate_entries(object: &Value) -> Vec<Duplicate> {
    let mut out = Vec::new();
    let meta = object.get("metadata");
    let owner_refs = || FieldPath::fields(["metadata", "ownerReferences"]);
    if let Some(refs) = meta
        .and_then(|m| m.get("ownerReferences"))
        .and_then(Value::as_array)
    {
        let by_uid = repeats(owner_refs, refs, uid, |u| format!("uid {u}"), &mut out);
        // Entries repeated with one uid are reported; otherwise those that
        // repeat only by kind and name (different uids).
        if !by_uid {
            let by_ref = |r| Some(reference(r));
            let entry =
                |(api_version, kind, name): &(&str, &str, &str)| format!("{api_version} {kind} {name}");
            repeats(owner_refs, refs, by_ref, entry, &mut out);
        }
    }
    if let Some(finalizers) = meta.and_then(|m| m.get("finalizers")).and_then(Value::as_array) {
        let path = || FieldPath::fields(["metadata", "finalizers"]);
        repeats(path, finalizers, Value::as_str, |f| f.to_string(), &mut out);
    }
    if let Some(subjects) = object.get("subjects").and_then(Value::as_array) {
        let entry = |(kind, namespace, name): &(&str, &str, &str)| format!("{kind} {namespace}/{name}");
        repeats(
            || FieldPath::field("subjects"),
            subjects,
            |s| Some(subject(s)),
            entry,
            &mut out,
        );
    }
    let pod_specs: [&[&str]; 3] = [
        &["spec"],
        &["spec", "template", "spec"],
        &["spec", "jobTemplate", "spec", "template", "spec"],
    ];
    for names in pod_specs {
        let spec = names.iter().try_fold(object, |v, n| v.get(n));
        if let Some(spec) = spec.filter(|s| s.get("containers").is_some()) {
            pod_spec(&|| FieldPath::fields(names.iter().copied()), spec, &mut out);
        }
    }
    out
}

/// Sizes of the lists [`duplicate_entries`] checks at the object level, for
/// showing how a list grew.
pub fn list_sizes(object: &Value) -> BTreeMap<FieldPath, usize> {
    let mut out = BTreeMap::new();
    for path in [
        FieldPath::fields(["metadata", "ownerReferences"]),
        FieldPath::fields(["metadata", "finalizers"]),
        FieldPath::field("subjects"),
    ] {
        if let Some(a) = path.get(object).and_then(Value::as_array) {
            out.insert(path, a.len());
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn finds_repeats() {
        let dep = json!({"kind": "Deployment", "metadata": {
                "ownerReferences": [{"uid": "a", "kind": "X", "name": "x"}, {"uid": "a", "kind": "X", "name": "x"}],
                "finalizers": ["f", "g", "f"]},
            "spec": {"template": {"spec": {"containers": [{"name": "web", "env": [{"name": "A"}, {"name": "A"}]}]}}}});
        let d = duplicate_entries(&dep);
        let got: Vec<(&str, &str, usize)> = d
            .iter()
            .map(|d| (d.path.as_str(), d.entry.as_str(), d.count))
            .collect();
        assert_eq!(
            got,
            vec![
                ("metadata.ownerReferences", "uid a", 2),
                ("metadata.finalizers", "f", 2),
                ("spec.template.spec.containers[name=web].env", "name A", 2)
            ]
        );
        let rb = json!({"kind": "RoleBinding", "subjects": [{"kind": "User", "name": "u"}, {"kind": "User", "name": "u"}, {"kind": "User", "name": "v"}]});
        assert_eq!(duplicate_entries(&rb)[0].entry, "User /u");
        assert!(duplicate_entries(&json!({"metadata": {"finalizers": ["a", "b"]}})).is_empty());
        // Two owners of one kind and name under different uids.
        let refs = json!({"metadata": {"ownerReferences": [
            {"uid": "a", "apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web.v1"},
            {"uid": "b", "apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web.v1"},
            {"uid": "c", "apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web.v2"}]}});
        let d = duplicate_entries(&refs);
        assert_eq!(d.len(), 1);
        assert_eq!(
            (d[0].path.as_str(), d[0].entry.as_str(), d[0].count),
            ("metadata.ownerReferences", "apps/v1 ReplicaSet web.v1", 2)
        );
        // A CronJob's pod template, whose containers repeat by name.
        let cron = json!({"spec": {"jobTemplate": {"spec": {"template": {"spec": {"containers": [{"name": "a.b"}, {"name": "a.b"}]}}}}}});
        let d = duplicate_entries(&cron);
        assert_eq!(
            d[0].path,
            FieldPath::fields(["spec", "jobTemplate", "spec", "template", "spec", "containers"])
        );
        assert_eq!((d[0].entry.as_str(), d[0].count), ("name a.b", 2));
        assert_eq!(
            list_sizes(&dep)[&FieldPath::fields(["metadata", "finalizers"])],
            3
        );
    }
}
