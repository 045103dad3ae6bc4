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

/// How a stored fact's column holds it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FactType {
    Int,
    Text,
    Bytes,
}

/// One stored fact's value, borrowed from its [`ObjectFacts`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StoredFact<'a> {
    Int(Option<i64>),
    Text(Option<&'a str>),
    Bytes(Option<&'a [u8]>),
}

impl StoredFact<'_> {
    pub fn kind(&self) -> FactType {
        match self {
            StoredFact::Int(_) => FactType::Int,
            StoredFact::Text(_) => FactType::Text,
            StoredFact::Bytes(_) => FactType::Bytes,
        }
    }
}

/// A stored row the facts are read back from, one column after another in
/// the order of [`ObjectFacts::COLUMNS`].
pub trait FactRow {
    type Error;
    fn int(&mut self, column: &'static str) -> Result<Option<i64>, Self::Error>;
    fn text(&mut self, column: &'static str) -> Result<Option<String>, Self::Error>;
    fn bytes(&mut self, column: &'static str) -> Result<Option<Vec<u8>>, Self::Error>;
}

/// How many facts a revision row stores.
pub const STORED_FACTS: usize = 17;

impl ObjectFacts {
    /// The column each stored fact has in a revision row, in the order of
    /// [`Self::stored`] and [`Self::read`]. Both backends' bulk inserts and
    /// the history read iterate these, so a new fact is its field, its
    /// line here, in `stored` and in `read`, and its column in each
    /// backend's migration and `store::tables::COLUMNS`. `renew_time` is
    /// kept as a mark of the clock, not per revision.
    pub const COLUMNS: [&'static str; STORED_FACTS] = [
        "owner_kind",
        "owner_name",
        "owner_uid",
        "generate_name",
        "spec_hash",
        "creation_timestamp",
        "deletion_timestamp",
        "phase",
        "node",
        "desired",
        "managers",
        "observed_generation",
        "finalizers",
        "owner_refs",
        "written_at",
        "event_time",
        "foreign_evidence",
    ];

    /// Each stored fact's value, in the order of [`Self::COLUMNS`].
    pub fn stored<'a>(&'a self) -> [StoredFact<'a>; STORED_FACTS] {
        let text = |t: &'a Option<String>| StoredFact::Text(t.as_deref());
        [
            text(&self.owner_kind),
            text(&self.owner_name),
            text(&self.owner_uid),
            text(&self.generate_name),
            StoredFact::Bytes(self.spec_hash.as_deref()),
            text(&self.creation_timestamp),
            text(&self.deletion_timestamp),
            text(&self.phase),
            text(&self.node),
            StoredFact::Int(self.desired),
            text(&self.managers),
            StoredFact::Int(self.observed_generation),
            text(&self.finalizers),
            text(&self.owner_refs),
            text(&self.written_at),
            text(&self.event_time),
            text(&self.foreign),
        ]
    }

    /// The column type of each stored fact, in the order of [`Self::COLUMNS`].
    pub fn stored_types() -> [FactType; STORED_FACTS] {
        ObjectFacts::default().stored().map(|f| f.kind())
    }

    /// The facts a row stored, read in the order of [`Self::COLUMNS`].
    pub fn read<R: FactRow>(row: &mut R) -> Result<Self, R::Error> {
        Ok(ObjectFacts {
            owner_kind: row.text("owner_kind")?,
            owner_name: row.text("owner_name")?,
            owner_uid: row.text("owner_uid")?,
            generate_name: row.text("generate_name")?,
            spec_hash: row.bytes("spec_hash")?,
            creation_timestamp: row.text("creation_timestamp")?,
            deletion_timestamp: row.text("deletion_timestamp")?,
            phase: row.text("phase")?,
            node: row.text("node")?,
            desired: row.int("desired")?,
            managers: row.text("managers")?,
            observed_generation: row.int("observed_generation")?,
            finalizers: row.text("finalizers")?,
            owner_refs: row.text("owner_refs")?,
            written_at: row.text("written_at")?,
            renew_time: None,
            event_time: row.text("event_time")?,
            foreign: row.text("foreign_evidence")?,
        })
    }
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

    /// Reads back what `stored` gave, checking each column's name, place
    /// and type.
    struct Stored<'a>(
        std::iter::Zip<
            std::slice::Iter<'a, &'static str>,
            std::array::IntoIter<StoredFact<'a>, STORED_FACTS>,
        >,
    );

    impl Stored<'_> {
        fn next(&mut self, column: &str, kind: FactType) -> Result<StoredFact<'_>, String> {
            let (name, value) = self.0.next().ok_or(format!("{column} read past the last fact"))?;
            if *name != column || value.kind() != kind {
                return Err(format!(
                    "{column} ({kind:?}) read where {name} ({:?}) is",
                    value.kind()
                ));
            }
            Ok(value)
        }
    }

    impl FactRow for Stored<'_> {
        type Error = String;
        fn int(&mut self, column: &'static str) -> Result<Option<i64>, String> {
            match self.next(column, FactType::Int)? {
                StoredFact::Int(n) => Ok(n),
                _ => unreachable!("kinds checked"),
            }
        }
        fn text(&mut self, column: &'static str) -> Result<Option<String>, String> {
            match self.next(column, FactType::Text)? {
                StoredFact::Text(t) => Ok(t.map(str::to_string)),
                _ => unreachable!("kinds checked"),
            }
        }
        fn bytes(&mut self, column: &'static str) -> Result<Option<Vec<u8>>, String> {
            match self.next(column, FactType::Bytes)? {
                StoredFact::Bytes(b) => Ok(b.map(<[u8]>::to_vec)),
                _ => unreachable!("kinds checked"),
            }
        }
    }

    #[test]
    fn every_stored_fact_reads_back_from_its_own_column() {
        let text = |n: &str| Some(format!("fact {n}"));
        let facts = ObjectFacts {
            owner_kind: text("owner_kind"),
            owner_name: text("owner_name"),
            owner_uid: text("owner_uid"),
            generate_name: text("generate_name"),
            spec_hash: Some(vec![1, 2]),
            creation_timestamp: text("creation_timestamp"),
            deletion_timestamp: text("deletion_timestamp"),
            phase: text("phase"),
            node: text("node"),
            desired: Some(3),
            managers: text("managers"),
            observed_generation: Some(4),
            finalizers: text("finalizers"),
            owner_refs: text("owner_refs"),
            written_at: text("written_at"),
            renew_time: None,
            event_time: text("event_time"),
            foreign: text("foreign_evidence"),
        };
        let mut row = Stored(ObjectFacts::COLUMNS.iter().zip(facts.stored()));
        assert_eq!(ObjectFacts::read(&mut row), Ok(facts.clone()));
        assert!(row.0.next().is_none(), "every stored fact is read");
        let distinct: std::collections::HashSet<_> = ObjectFacts::COLUMNS.iter().collect();
        assert_eq!(distinct.len(), STORED_FACTS);
    }

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
