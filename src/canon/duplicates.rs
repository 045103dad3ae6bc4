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

fn text(v: &Value, k: &str) -> String {
    v.get(k).and_then(Value::as_str).unwrap_or_default().to_string()
}

/// Counts entries by `key_of` and reports those seen more than once.
fn repeats(
    path: &FieldPath,
    items: Option<&Value>,
    key_of: &dyn Fn(&Value) -> Option<String>,
    out: &mut Vec<Duplicate>,
) {
    let Some(items) = items.and_then(Value::as_array) else {
        return;
    };
    let mut counts: BTreeMap<String, usize> = BTreeMap::new();
    for item in items {
        if let Some(k) = key_of(item) {
            *counts.entry(k).or_default() += 1;
        }
    }
    out.extend(
        counts
            .into_iter()
            .filter(|(_, n)| *n > 1)
            .map(|(entry, count)| Duplicate {
                path: path.clone(),
                entry,
                count,
            }),
    );
}

fn by_name(v: &Value) -> Option<String> {
    v.get("name")
        .and_then(Value::as_str)
        .filter(|n| !n.is_empty())
        .map(|n| format!("name {n}"))
}

/// [`repeats`] by name, for the long lists of pod specs: names are compared
/// borrowed first, and the path is only formatted when one repeats.
fn repeats_by_name(path: impl FnOnce() -> FieldPath, items: Option<&Value>, out: &mut Vec<Duplicate>) {
    let Some(list) = items.and_then(Value::as_array) else {
        return;
    };
    let mut names: Vec<&str> = list
        .iter()
        .filter_map(|v| v.get("name").and_then(Value::as_str))
        .filter(|n| !n.is_empty())
        .collect();
    names.sort_unstable();
    if names.windows(2).any(|w| w[0] == w[1]) {
        repeats(&path(), items, &by_name, out);
    }
}

fn pod_spec(path: &FieldPath, spec: &Value, out: &mut Vec<Duplicate>) {
    for list in ["containers", "initContainers", "ephemeralContainers"] {
        repeats_by_name(|| path.join_field(list), spec.get(list), out);
        for c in spec.get(list).and_then(Value::as_array).into_iter().flatten() {
            let container = || {
                path.join_field(list)
                    .join(&Segment::Item(vec![("name".into(), text(c, "name"))]))
            };
            repeats_by_name(|| container().join_field("env"), c.get("env"), out);
            repeats_by_name(|| container().join_field("ports"), c.get("ports"), out);
        }
    }
    repeats_by_name(|| path.join_field("volumes"), spec.get("volumes"), out);
}

/// Every repeated entry in `object`.
pub fn duplicate_entries(object: &Value) -> Vec<Duplicate> {
    let mut out = Vec::new();
    let meta = object.get("metadata");
    let refs = meta.and_then(|m| m.get("ownerReferences"));
    let owner_refs = FieldPath::fields(["metadata", "ownerReferences"]);
    repeats(
        &owner_refs,
        refs,
        &|r| Some(format!("uid {}", text(r, "uid"))).filter(|_| !text(r, "uid").is_empty()),
        &mut out,
    );
    let by_uid: Vec<String> = out.iter().map(|d| d.entry.clone()).collect();
    let mut by_ref = Vec::new();
    repeats(
        &owner_refs,
        refs,
        &|r| {
            Some(format!(
                "{} {} {}",
                text(r, "apiVersion"),
                text(r, "kind"),
                text(r, "name")
            ))
        },
        &mut by_ref,
    );
    // Entries repeated with one uid are already reported; add those that
    // repeat only by kind and name (different uids).
    if by_uid.is_empty() {
        out.extend(by_ref);
    }
    repeats(
        &FieldPath::fields(["metadata", "finalizers"]),
        meta.and_then(|m| m.get("finalizers")),
        &|f| f.as_str().map(str::to_string),
        &mut out,
    );
    repeats(
        &FieldPath::field("subjects"),
        object.get("subjects"),
        &|s| {
            Some(format!(
                "{} {}/{}",
                text(s, "kind"),
                text(s, "namespace"),
                text(s, "name")
            ))
        },
        &mut out,
    );
    for path in [
        FieldPath::field("spec"),
        FieldPath::fields(["spec", "template", "spec"]),
        FieldPath::fields(["spec", "jobTemplate", "spec", "template", "spec"]),
    ] {
        if let Some(spec) = path.get(object).filter(|s| s.get("containers").is_some()) {
            pod_spec(&path, spec, &mut out);
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
        assert_eq!(
            list_sizes(&dep)[&FieldPath::fields(["metadata", "finalizers"])],
            3
        );
    }
}
