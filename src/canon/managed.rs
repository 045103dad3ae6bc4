//! Field-manager attribution: which `managedFields` entries cover a field
//! path (by walking `fieldsV1`: `f:` fields, `k:` keys, `v:` values, `i:`
//! indexes) and which of them changed between two revisions.

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

/// Whether a `fieldsV1` set covers the dotted `path` (or a parent of it).
pub fn covers(fields: &Value, path: &str) -> bool {
    let mut node = fields;
    for part in path.split('.') {
        let Some(map) = node.as_object() else { return false };
        if map.is_empty() {
            // An empty set owns the whole value above this point.
            return true;
        }
        match map.get(&format!("f:{part}")) {
            Some(next) => node = next,
            None => return false,
        }
    }
    true
}

/// For each changed path, the labels of the managers whose entry covers it
/// and changed between `prev` and `cur` (added, or fieldsV1 or time
/// changed); when none changed, the current owners of the path.
/// `metadata.managedFields` is attributed to the entries that changed.
pub fn attribute(prev: &[Entry], cur: &[Entry], paths: &[String]) -> BTreeMap<String, Vec<String>> {
    let changed: Vec<&Entry> = cur
        .iter()
        .filter(|e| !prev.iter().any(|p| p.identity() == e.identity() && p == *e))
        .collect();
    paths
        .iter()
        .map(|path| {
            // managedFields itself changes with the entries that changed (a
            // time, an operation): their managers wrote it.
            if path == "metadata.managedFields" {
                let mut by: Vec<String> = changed.iter().map(|e| e.label()).collect();
                by.sort();
                by.dedup();
                return (path.clone(), by);
            }
            let mut by: Vec<String> = changed
                .iter()
                .filter(|e| covers(&e.fields, path))
                .map(|e| e.label())
                .collect();
            if by.is_empty() {
                by = cur
                    .iter()
                    .filter(|e| covers(&e.fields, path))
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
            &[
                "spec.replicas".into(),
                "metadata.labels".into(),
                "status.x".into(),
            ],
        );
        assert_eq!(by["spec.replicas"], vec!["hpa"]);
        assert_eq!(by["metadata.labels"], vec!["hpa"]);
        assert!(!by.contains_key("status.x"));
        assert!(covers(&json!({"f:data": {}}), "data.key"));
        assert!(!covers(&json!({"f:data": {"f:a": {}}}), "data.b"));
    }
}
