//! Facts about an object that detectors compare across objects: its
//! owners, generateName, spec hash, timestamps, finalizers, phase, node,
//! the count an owner asks for, and its field managers.

use super::canonical;
use super::managed::entries;
use serde_json::Value;
use sha2::{Digest, Sha256};

/// What detectors need to know about one revision's object.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ObjectFacts {
    pub owner_kind: Option<String>,
    pub owner_name: Option<String>,
    pub owner_uid: Option<String>,
    pub generate_name: Option<String>,
    pub spec_hash: Option<Vec<u8>>,
    pub creation_timestamp: Option<String>,
    pub deletion_timestamp: Option<String>,
    pub phase: Option<String>,
    pub node: Option<String>,
    pub desired: Option<i64>,
    pub managers: Option<String>,
    pub observed_generation: Option<i64>,
    /// `metadata.finalizers` as a JSON array of `{name, managers}`: each
    /// finalizer and the field managers whose managedFields entry owns it.
    pub finalizers: Option<String>,
    /// Every `metadata.ownerReferences` entry as a JSON array of
    /// `{apiVersion, kind, name, uid}` (and `controller: true` for the
    /// controller).
    pub owner_refs: Option<String>,
    /// The newest time the object carries (its managedFields entries'
    /// times and creationTimestamp): the write was no earlier.
    pub written_at: Option<String>,
    /// A Lease's `spec.renewTime`: its holder renewed it then, just before
    /// this write (the run keeps it as a mark of the cluster's clock).
    pub renew_time: Option<String>,
    /// An Event's newest occurrence (`lastTimestamp`, `eventTime`,
    /// `series.lastObservedTime`): the write was no earlier.
    pub event_time: Option<String>,
    /// Evidence in the stored value that kube-apiserver did not write it,
    /// as a JSON array of `{signal, detail}`; set by the ingest stage,
    /// which knows the key and the stored bytes.
    pub foreign: Option<String>,
}

/// The newest occurrence an Event (core or `events.k8s.io`) records.
fn event_time(object: &Value) -> Option<String> {
    if object.get("kind").and_then(Value::as_str) != Some("Event") {
        return None;
    }
    [
        &["lastTimestamp"][..],
        &["eventTime"],
        &["series", "lastObservedTime"],
        &["deprecatedLastTimestamp"],
    ]
    .iter()
    .filter_map(|p| at(object, p).and_then(Value::as_str))
    .filter_map(|t| Some((t.parse::<jiff::Timestamp>().ok()?, t)))
    .max_by_key(|(at, _)| *at)
    .map(|(_, t)| t.to_string())
}

/// A Lease's `spec.renewTime`, the one time a cluster writes every few
/// seconds.
pub fn renew_time(object: &Value) -> Option<String> {
    let lease = object.get("kind").and_then(Value::as_str) == Some("Lease")
        && object
            .get("apiVersion")
            .and_then(Value::as_str)
            .is_some_and(|v| v.starts_with("coordination.k8s.io/"));
    lease.then(|| text(at(object, &["spec", "renewTime"])))?
}

/// The newest of the object's managedFields times and creationTimestamp,
/// compared as instants.
fn written_at(meta: Option<&Value>) -> Option<String> {
    let times = meta
        .and_then(|m| m.get("managedFields"))
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|e| e.get("time"))
        .chain(meta.and_then(|m| m.get("creationTimestamp")));
    times
        .filter_map(Value::as_str)
        .filter_map(|t| Some((t.parse::<jiff::Timestamp>().ok()?, t)))
        .max_by_key(|(at, _)| *at)
        .map(|(_, t)| t.to_string())
}

/// `metadata.finalizers` (and a Namespace's `spec.finalizers`, which hold
/// it until the namespace controller has emptied it) with the managers
/// that own each (`fieldsV1` `f:metadata` → `f:finalizers` → `v:"<name>"`).
fn finalizers(object: &Value) -> Option<String> {
    let managed = at(object, &["metadata", "managedFields"])
        .map(entries)
        .unwrap_or_default();
    let namespace = object.get("kind").and_then(Value::as_str) == Some("Namespace");
    let sources = [
        (["metadata", "finalizers"], ["f:metadata", "f:finalizers"]),
        (["spec", "finalizers"], ["f:spec", "f:finalizers"]),
    ];
    let mut list: Vec<Value> = Vec::new();
    for (path, owned) in sources.iter().take(if namespace { 2 } else { 1 }) {
        let names = at(object, path).and_then(Value::as_array).into_iter().flatten();
        for name in names.filter_map(Value::as_str) {
            let member = format!("v:{}", Value::String(name.to_string()));
            let by: Vec<String> = managed
                .iter()
                .filter(|e| at(&e.fields, owned).and_then(|f| f.get(&member)).is_some())
                .map(|e| e.label())
                .collect();
            list.push(serde_json::json!({"name": name, "managers": by}));
        }
    }
    (!list.is_empty()).then(|| Value::Array(list).to_string())
}

/// Every ownerReference, reduced to what identifies its owner.
fn owner_refs(meta: Option<&Value>) -> Option<String> {
    let refs = meta?.get("ownerReferences")?.as_array()?;
    let list: Vec<Value> = refs
        .iter()
        .map(|r| {
            let mut out = serde_json::Map::new();
            for k in ["apiVersion", "kind", "name", "uid"] {
                out.insert(
                    k.into(),
                    r.get(k).cloned().unwrap_or(Value::String(String::new())),
                );
            }
            if r.get("controller").and_then(Value::as_bool) == Some(true) {
                out.insert("controller".into(), Value::Bool(true));
            }
            Value::Object(out)
        })
        .collect();
    (!list.is_empty()).then(|| Value::Array(list).to_string())
}

/// The value at `path` (member names, outermost first): what
/// [`Value::pointer`] finds for a path of plain names, without building a
/// string for each of its steps (2% of a file run's decoding went there).
fn at<'v>(v: &'v Value, path: &[&str]) -> Option<&'v Value> {
    path.iter().try_fold(v, |v, name| v.get(name))
}

fn text(v: Option<&Value>) -> Option<String> {
    v.and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .map(str::to_string)
}

/// The node a Pod runs on, or the one its (DaemonSet) node affinity pins it to.
fn node(object: &Value) -> Option<String> {
    text(at(object, &["spec", "nodeName"])).or_else(|| {
        let terms = at(
            object,
            &[
                "spec",
                "affinity",
                "nodeAffinity",
                "requiredDuringSchedulingIgnoredDuringExecution",
                "nodeSelectorTerms",
            ],
        )?;
        terms.as_array()?.iter().find_map(|t| {
            t.get("matchFields")?.as_array()?.iter().find_map(|f| {
                (f.get("key")?.as_str()? == "metadata.name").then(|| text(f.get("values")?.get(0)))?
            })
        })
    })
}

/// Reads the facts of a decoded object.
pub fn object_facts(object: &Value) -> ObjectFacts {
    object_facts_with_spec_hash(object, spec_hash(object))
}

/// First 16 bytes of the SHA-256 of the canonical `spec`, if there is one.
pub fn spec_hash(object: &Value) -> Option<Vec<u8>> {
    object.get("spec").map(|s| {
        Sha256::digest(serde_json::to_vec(&canonical(s)).expect("JSON values serialize"))[..16].to_vec()
    })
}

/// [`object_facts`] with the spec hash already known (the store takes it
/// from the field hash of `spec`, which is the same digest).
pub fn object_facts_with_spec_hash(object: &Value, spec_hash: Option<Vec<u8>>) -> ObjectFacts {
    let meta = object.get("metadata");
    let controller = meta
        .and_then(|m| m.get("ownerReferences"))
        .and_then(Value::as_array)
        .and_then(|refs| {
            refs.iter()
                .find(|r| r.get("controller").and_then(Value::as_bool) == Some(true))
        });
    let kind = object.get("kind").and_then(Value::as_str).unwrap_or_default();
    let desired = match kind {
        "ReplicaSet" | "ReplicationController" | "StatefulSet" => Some(
            at(object, &["spec", "replicas"])
                .and_then(Value::as_i64)
                .unwrap_or(1),
        ),
        "Job" => Some(
            at(object, &["spec", "parallelism"])
                .and_then(Value::as_i64)
                .unwrap_or(1),
        ),
        _ => None,
    };
    let managers: Vec<String> = meta
        .and_then(|m| m.get("managedFields"))
        .and_then(Value::as_array)
        .map(|entries| entries.iter().filter_map(|e| text(e.get("manager"))).collect())
        .unwrap_or_default();
    ObjectFacts {
        owner_kind: controller.and_then(|c| text(c.get("kind"))),
        owner_name: controller.and_then(|c| text(c.get("name"))),
        owner_uid: controller.and_then(|c| text(c.get("uid"))),
        generate_name: text(meta.and_then(|m| m.get("generateName"))),
        spec_hash,
        creation_timestamp: text(meta.and_then(|m| m.get("creationTimestamp"))),
        deletion_timestamp: text(meta.and_then(|m| m.get("deletionTimestamp"))),
        phase: text(at(object, &["status", "phase"])),
        node: node(object),
        desired,
        managers: (!managers.is_empty()).then(|| managers.join(",")),
        observed_generation: at(object, &["status", "observedGeneration"]).and_then(Value::as_i64),
        finalizers: finalizers(object),
        owner_refs: owner_refs(meta),
        written_at: written_at(meta),
        renew_time: renew_time(object),
        event_time: event_time(object),
        foreign: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn reads_finalizers_with_their_managers_and_every_owner() {
        let o = json!({"kind": "ConfigMap", "metadata": {
            "finalizers": ["example.com/cleanup", "kubernetes"],
            "ownerReferences": [{"apiVersion": "v1", "kind": "Node", "name": "n", "uid": "u"}],
            "managedFields": [
                {"manager": "operator", "operation": "Update",
                 "fieldsV1": {"f:metadata": {"f:finalizers": {".": {}, "v:\"example.com/cleanup\"": {}}}}},
                {"manager": "kubectl", "operation": "Apply", "fieldsV1": {"f:data": {}}}]}});
        let f = object_facts(&o);
        let finalizers: Value = serde_json::from_str(f.finalizers.as_deref().unwrap()).unwrap();
        assert_eq!(
            finalizers,
            json!([{"name": "example.com/cleanup", "managers": ["operator"]}, {"name": "kubernetes", "managers": []}])
        );
        let owners: Value = serde_json::from_str(f.owner_refs.as_deref().unwrap()).unwrap();
        assert_eq!(
            owners,
            json!([{"apiVersion": "v1", "kind": "Node", "name": "n", "uid": "u"}])
        );
        assert_eq!(object_facts(&json!({"metadata": {}})).finalizers, None);
    }

    #[test]
    fn reads_owner_node_and_desired() {
        let pod = json!({"kind": "Pod", "metadata": {"generateName": "ds-", "ownerReferences": [
                {"kind": "Node", "name": "n", "uid": "x"},
                {"kind": "DaemonSet", "name": "ds", "uid": "u1", "controller": true}],
                "managedFields": [{"manager": "kube-controller-manager"}]},
            "spec": {"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
                {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["worker-1"]}]}]}}}},
            "status": {"phase": "Running"}});
        let f = object_facts(&pod);
        assert_eq!(
            (f.owner_kind.as_deref(), f.owner_uid.as_deref()),
            (Some("DaemonSet"), Some("u1"))
        );
        assert_eq!(
            (f.node.as_deref(), f.phase.as_deref(), f.desired),
            (Some("worker-1"), Some("Running"), None)
        );
        assert_eq!(f.managers.as_deref(), Some("kube-controller-manager"));
        assert_eq!(object_facts(&json!({"kind": "Job", "spec": {}})).desired, Some(1));
        assert_eq!(
            object_facts(&json!({"kind": "ReplicaSet", "spec": {"replicas": 0}})).desired,
            Some(0)
        );
        let a = object_facts(&json!({"kind": "Pod", "spec": {"x": 1, "y": ""}})).spec_hash;
        assert_eq!(
            a,
            object_facts(&json!({"kind": "Pod", "spec": {"x": 1}})).spec_hash
        );
    }
}
