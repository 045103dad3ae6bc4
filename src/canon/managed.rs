//! Field-manager attribution: which `managedFields` entries cover a field
//! path (by walking `fieldsV1`: `f:` fields, `k:` keys, `v:` values, `i:`
//! indexes) and which of them changed between two revisions.

use super::path::{scalar_text, FieldPath, Segment, MANAGED_FIELDS};
use serde_json::Value;
use std::collections::BTreeMap;

/// One `metadata.managedFields` entry.
#[derive(Clone, Debug, PartialEq)]
pub struct Entry {
    pub manager: String,
    pub operation: String,
    pub subresource: String,
    pub time: Option<String>,
    pub fields: Value,
}

impl Entry {
    /// How people name the writer: `kubelet/status`, `kubectl (apply)`.
    pub fn label(&self) -> String {
        let mut s = self.manager.clone();
        if !self.subresource.is_empty() {
            s.push('/');
            s.push_str(&self.subresource);
        }
        if self.operation == "Apply" {
            s.push_str(" (apply)");
        }
        s
    }

    fn identity(&self) -> (&str, &str, &str) {
        (&self.manager, &self.operation, &self.subresource)
    }
}

/// The entries of a `managedFields` array.
pub fn entries(managed: &Value) -> Vec<Entry> {
    let text = |e: &Value, k: &str| e.get(k).and_then(Value::as_str).unwrap_or_default().to_string();
    managed
        .as_array()
        .into_iter()
        .flatten()
        .map(|e| Entry {
            manager: text(e, "manager"),
            operation: text(e, "operation"),
            subresource: text(e, "subresource"),
            time: e.get("time").and_then(Value::as_str).map(str::to_string),
            fields: e.get("fieldsV1").cloned().unwrap_or(Value::Null),
        })
        .collect()
}

/// Whether a `fieldsV1` set covers the path of `segments` (or a parent of
/// it): an object member is an `f:` entry, a list item an `i:` (index), `k:`
/// (merge keys) or `v:` (value) entry. The path comes split, so that one
/// split serves every entry it is checked against.
pub fn covers(fields: &Value, segments: &[Segment]) -> bool {
    let mut node = fields;
    for segment in segments {
        let Some(map) = node.as_object() else { return false };
        if map.is_empty() {
            // An empty set owns the whole value above this point.
            return true;
        }
        match member(map, segment) {
            Some(next) => node = next,
            None => return false,
        }
    }
    true
}

/// The `fieldsV1` entry for one segment.
fn member<'v>(map: &'v serde_json::Map<String, Value>, segment: &Segment) -> Option<&'v Value> {
    match segment {
        Segment::Field(name) => map.get(&format!("f:{name}")),
        Segment::Index(i) => map.get(&format!("i:{i}")),
        Segment::Item(keys) => map.iter().find_map(|(k, v)| {
            let wanted: Value = serde_json::from_str(k.strip_prefix("k:")?).ok()?;
            let wanted = wanted.as_object()?;
            let same = wanted.len() == keys.len()
                && keys
                    .iter()
                    .all(|(name, text)| wanted.get(name).and_then(scalar_text).as_deref() == Some(text));
            same.then_some(v)
        }),
        Segment::Value(text) => map.iter().find_map(|(k, v)| {
            let value: Value = serde_json::from_str(k.strip_prefix("v:")?).ok()?;
            (scalar_text(&value).as_deref() == Some(text)).then_some(v)
        }),
    }
}

/// For each changed path, the labels of the managers whose entry covers it
/// and changed between `prev` and `cur` (added, or fieldsV1 or time
/// changed); when none changed, the current owners of the path.
/// `metadata.managedFields` is attributed to the entries that changed.
pub fn attribute(prev: &[Entry], cur: &[Entry], paths: &[FieldPath]) -> BTreeMap<FieldPath, Vec<String>> {
    let changed: Vec<&Entry> = cur
        .iter()
        .filter(|e| !prev.iter().any(|p| p.identity() == e.identity() && p == *e))
        .collect();
    paths
        .iter()
        .map(|path| {
            // managedFields itself changes with the entries that changed (a
            // time, an operation): their managers wrote it.
            if path.as_str() == MANAGED_FIELDS {
                let mut by: Vec<String> = changed.iter().map(|e| e.label()).collect();
                by.sort();
                by.dedup();
                return (path.clone(), by);
            }
            // Split once: every entry is walked along the same segments.
            let segments = path.segments();
            let mut by: Vec<String> = changed
                .iter()
                .filter(|e| covers(&e.fields, &segments))
                .map(|e| e.label())
                .collect();
            if by.is_empty() {
                by = cur
                    .iter()
                    .filter(|e| covers(&e.fields, &segments))
                    .map(|e| e.label())
                    .collect();
            }
            by.sort();
            by.dedup();
            (path.clone(), by)
        })
        .filter(|(_, by)| !by.is_empty())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn entry(manager: &str, time: &str, fields: Value) -> Value {
        json!({"manager": manager, "operation": "Update", "time": time, "fieldsType": "FieldsV1", "fieldsV1": fields})
    }

    #[test]
    fn attributes_changed_paths_to_changed_covering_entries() {
        let prev = entries(&json!([
            entry(
                "kubectl",
                "2026-01-01T00:00:00Z",
                json!({"f:spec": {"f:replicas": {}}})
            ),
            entry(
                "hpa",
                "2026-01-01T00:00:00Z",
                json!({"f:metadata": {"f:labels": {"f:a": {}}}})
            )
        ]));
        let cur = entries(&json!([
            entry(
                "kubectl",
                "2026-01-01T00:00:00Z",
                json!({"f:spec": {"f:replicas": {}}})
            ),
            entry(
                "hpa",
                "2026-01-01T00:05:00Z",
                json!({"f:metadata": {"f:labels": {"f:a": {}}}, "f:spec": {"f:replicas": {}}})
            )
        ]));
        let by = attribute(
            &prev,
            &cur,
            &[p("spec.replicas"), p("metadata.labels"), p("status.x")],
        );
        assert_eq!(by[&p("spec.replicas")], vec!["hpa"]);
        assert_eq!(by[&p("metadata.labels")], vec!["hpa"]);
        assert!(!by.contains_key(&p("status.x")));
        assert!(covers(&json!({"f:data": {}}), &p("data.key").segments()));
        assert!(!covers(&json!({"f:data": {"f:a": {}}}), &p("data.b").segments()));
    }

    fn p(text: &str) -> FieldPath {
        FieldPath::parse(text).unwrap()
    }

    #[test]
    fn dotted_keys_and_list_items_map_to_their_field_set_entries() {
        let set = json!({"f:data": {"f:app.properties": {}}, "f:metadata": {"f:labels": {"f:app.kubernetes.io/name": {}},
            "f:finalizers": {".": {}, "v:\"kubernetes.io/pvc-protection\"": {}}},
            "f:spec": {"f:containers": {"k:{\"name\":\"web\"}": {".": {}, "f:image": {},
                "f:ports": {"k:{\"containerPort\":80,\"protocol\":\"TCP\"}": {".": {}, "f:containerPort": {}}}}},
                "f:args": {"i:0": {}}}});
        for covered in [
            r"data.app\.properties",
            r#"data["app.properties"]"#,
            r"metadata.labels.app\.kubernetes\.io/name",
            "metadata.finalizers[=kubernetes.io/pvc-protection]",
            "spec.containers[name=web].image",
            "spec.containers[name=web].ports[containerPort=80,protocol=TCP].containerPort",
            "spec.args[0]",
        ] {
            assert!(covers(&set, &p(covered).segments()), "{covered}");
        }
        for not in [
            "data.app",
            "data.app.properties",
            "metadata.finalizers[=other]",
            "spec.containers[name=api].image",
            "spec.containers[name=web].ports[containerPort=80].containerPort",
            "spec.args[1]",
        ] {
            assert!(!covers(&set, &p(not).segments()), "{not}");
        }
    }

    #[test]
    fn a_fight_over_a_dotted_key_names_both_managers() {
        let a = |t: &str| entry("a", t, json!({"f:data": {"f:app.properties": {}}}));
        let b = |t: &str| entry("b", t, json!({"f:data": {"f:app.properties": {}}}));
        let prev = entries(&json!([a("2026-01-01T00:00:00Z")]));
        let cur = entries(&json!([a("2026-01-01T00:00:00Z"), b("2026-01-01T00:01:00Z")]));
        let path = FieldPath::fields(["data", "app.properties"]);
        assert_eq!(
            attribute(&prev, &cur, std::slice::from_ref(&path))[&path],
            vec!["b"]
        );
    }
}
