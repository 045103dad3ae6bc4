//! A stored revision back as a Kubernetes object: from its semantic form
//! (or, for content never stored, from its field hashes), and as a
//! manifest `kubectl apply -f` or `kubectl create -f` takes to recreate it.

use super::path::{FieldPath, Segment};
use super::semantic::FIELD_HASH_LEN;
use serde_json::{Map, Value};
use std::collections::BTreeMap;

/// The annotation `kubectl apply` keeps the applied manifest in.
pub const LAST_APPLIED: &str = "kubectl.kubernetes.io/last-applied-configuration";

/// Metadata a server sets, which a manifest must not carry.
const SERVER_SET: [&str; 8] = [
    "resourceVersion",
    "uid",
    "creationTimestamp",
    "generation",
    "managedFields",
    "selfLink",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
];

/// Kinds whose `spec.replicas` the apiserver sets (to 1) when a write
/// leaves it unset, in every version that stores them: a stored one always
/// has it, so a semantic form without it (which drops zeros as empty) had
/// `replicas: 0`.
const DEFAULTED_REPLICAS: [&str; 4] = ["Deployment", "ReplicaSet", "StatefulSet", "ReplicationController"];

/// The object whose semantic form is `form`, as the apiserver would serve
/// it: `apiVersion` back from the revision (the form keeps only the group),
/// `metadata.resourceVersion` its mod_revision, `managedFields` only when
/// asked for (kubectl hides them too), a workload's `replicas: 0` back (see
/// [`DEFAULTED_REPLICAS`]). Keys sorted, as `kubectl -o yaml` prints them.
pub fn object_of(form: Value, api_version: &str, mod_revision: i64, managed_fields: bool) -> Value {
    let Value::Object(mut map) = form else {
        return form;
    };
    map.remove("apiGroup");
    map.insert("apiVersion".into(), Value::String(api_version.to_string()));
    let scalable = map
        .get("kind")
        .and_then(Value::as_str)
        .is_some_and(|k| DEFAULTED_REPLICAS.contains(&k));
    if let (true, Some(Value::Object(spec))) = (scalable, map.get_mut("spec")) {
        if !spec.contains_key("replicas") {
            spec.insert("replicas".into(), Value::from(0));
            spec.sort_keys();
        }
    }
    let meta = map.entry("metadata").or_insert_with(|| Value::Object(Map::new()));
    if let Value::Object(meta) = meta {
        if !managed_fields {
            meta.remove("managedFields");
        }
        meta.insert("resourceVersion".into(), Value::String(mod_revision.to_string()));
        meta.sort_keys();
    }
    map.sort_keys();
    Value::Object(map)
}

/// What is known of a revision whose content holds sensitive values and is
/// never stored: its row's columns.
#[derive(Clone, Debug, Default)]
pub struct RowColumns<'a> {
    pub api_version: &'a str,
    pub kind: &'a str,
    pub namespace: Option<&'a str>,
    pub name: Option<&'a str>,
    pub uid: Option<&'a str>,
    pub generation: Option<i64>,
    pub mod_revision: i64,
}

/// The placeholder a value stored only as a hash shows.
pub fn hashed(hash: &[u8; FIELD_HASH_LEN]) -> Value {
    Value::String(format!(
        "<redacted: stored only as hash {}>",
        crate::hex::hex(hash)
    ))
}

/// An object rebuilt from what is stored of content never stored: its
/// metadata from the row, every other hashed field (for a Secret, each
/// `data` key) as [`hashed`] at the deepest field path stored.
pub fn redacted_object(row: &RowColumns, fields: &BTreeMap<FieldPath, [u8; FIELD_HASH_LEN]>) -> Value {
    let mut meta = Map::new();
    let mut put = |k: &str, v: Option<Value>| {
        if let Some(v) = v {
            meta.insert(k.into(), v);
        }
    };
    put("name", row.name.map(|s| Value::String(s.into())));
    put("namespace", row.namespace.map(|s| Value::String(s.into())));
    put("uid", row.uid.map(|s| Value::String(s.into())));
    put("generation", row.generation.map(Value::from));
    put(
        "resourceVersion",
        Some(Value::String(row.mod_revision.to_string())),
    );
    meta.sort_keys();
    let mut object = Map::new();
    object.insert("apiVersion".into(), Value::String(row.api_version.into()));
    object.insert("kind".into(), Value::String(row.kind.into()));
    object.insert("metadata".into(), Value::Object(meta));
    for (path, hash) in fields {
        let fields: Vec<String> = path
            .segments()
            .into_iter()
            .map_while(|s| match s {
                Segment::Field(f) => Some(f),
                _ => None,
            })
            .collect();
        let Some((last, parents)) = fields.split_last() else {
            continue;
        };
        if matches!(fields[0].as_str(), "metadata" | "apiGroup" | "kind") {
            continue;
        }
        let mut at = &mut object;
        for p in parents {
            let next = at.entry(p.as_str()).or_insert(Value::Null);
            // A shallower path's placeholder gives way to the deeper paths.
            if !next.is_object() {
                *next = Value::Object(Map::new());
            }
            at = next.as_object_mut().expect("made an object");
        }
        if !matches!(at.get(last.as_str()), Some(Value::Object(_))) {
            at.insert(last.clone(), hashed(hash));
        }
    }
    object.sort_keys();
    Value::Object(object)
}

/// What `--for-apply` keeps that it drops by default.
#[derive(Clone, Copy, Debug, Default)]
pub struct ApplyOptions {
    /// Keep every ownerReference, even to owners that no longer exist.
    pub keep_owner_references: bool,
    /// Keep the last-applied-configuration annotation (the user's intent
    /// at their last `kubectl apply`).
    pub keep_last_applied: bool,
}

/// Turns `object` into a manifest that recreates it: no server-set
/// metadata, no `status`, no ownerReference to an owner `owner_live` says
/// is gone (a garbage collector would delete the object again), no
/// last-applied annotation unless `options` keep them; the order of what
/// stays is kept. Returns one line per ownerReference dropped.
pub fn for_apply(
    object: &mut Value,
    options: ApplyOptions,
    owner_live: &mut dyn FnMut(&str) -> bool,
) -> Vec<String> {
    let mut dropped = Vec::new();
    let Some(map) = object.as_object_mut() else {
        return dropped;
    };
    map.shift_remove("status");
    let Some(Value::Object(meta)) = map.get_mut("metadata") else {
        return dropped;
    };
    for field in SERVER_SET {
        meta.shift_remove(field);
    }
    if !options.keep_last_applied {
        if let Some(Value::Object(annotations)) = meta.get_mut("annotations") {
            annotations.shift_remove(LAST_APPLIED);
            if annotations.is_empty() {
                meta.shift_remove("annotations");
            }
        }
    }
    if !options.keep_owner_references {
        if let Some(Value::Array(owners)) = meta.get_mut("ownerReferences") {
            owners.retain(|o| {
                let uid = o.get("uid").and_then(Value::as_str).unwrap_or_default();
                let live = owner_live(uid);
                if !live {
                    let text = |k: &str| o.get(k).and_then(Value::as_str).unwrap_or("?");
                    dropped.push(format!(
                        "ownerReference to {} {} (uid {uid}) dropped: the owner no longer exists in the newest stored state",
                        text("kind"),
                        text("name")
                    ));
                }
                live
            });
            if owners.is_empty() {
                meta.shift_remove("ownerReferences");
            }
        }
    }
    dropped
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_semantic_form_becomes_the_served_object() {
        let form = json!({"apiGroup": "apps", "kind": "Deployment",
            "metadata": {"name": "web", "managedFields": [{"manager": "kubectl"}]}, "spec": {"replicas": 3}});
        let o = object_of(form, "apps/v1", 42, false);
        assert_eq!(
            serde_json::to_string(&o).unwrap(),
            r#"{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web","resourceVersion":"42"},"spec":{"replicas":3}}"#
        );
    }

    #[test]
    fn a_workload_scaled_to_zero_keeps_its_zero() {
        for (kind, api_version) in [
            ("Deployment", "apps/v1"),
            ("StatefulSet", "apps/v1"),
            ("ReplicationController", "v1"),
        ] {
            let form =
                json!({"kind": kind, "metadata": {"name": "web"}, "spec": {"selector": {"app": "web"}}});
            let o = object_of(form, api_version, 7, false);
            assert_eq!(o["spec"]["replicas"], 0, "{kind}");
        }
        let scaled = json!({"kind": "Deployment", "metadata": {"name": "web"}, "spec": {"replicas": 3}});
        assert_eq!(object_of(scaled, "apps/v1", 7, false)["spec"]["replicas"], 3);
        // Others have no defaulted replicas: nothing is added.
        let job = json!({"kind": "Job", "metadata": {"name": "j"}, "spec": {"parallelism": 2}});
        assert!(object_of(job, "batch/v1", 7, false)["spec"]
            .get("replicas")
            .is_none());
    }

    #[test]
    fn for_apply_drops_what_the_server_sets() {
        let mut o = json!({"apiVersion": "v1", "kind": "ConfigMap", "status": {"x": 1},
            "metadata": {"annotations": {LAST_APPLIED: "{}", "app.kubernetes.io/note": "kept"},
                "creationTimestamp": "2026-01-01T00:00:00Z", "generation": 2,
                "name": "app.config", "namespace": "shop", "resourceVersion": "9", "uid": "u1",
                "ownerReferences": [{"kind": "Deployment", "name": "gone", "uid": "dead"},
                                    {"kind": "Deployment", "name": "web", "uid": "live"}]},
            "data": {"app.properties": "a=1"}});
        let mut live = |uid: &str| uid == "live";
        let dropped = for_apply(&mut o, ApplyOptions::default(), &mut live);
        assert_eq!(dropped.len(), 1);
        assert!(dropped[0].contains("Deployment gone"), "{dropped:?}");
        let order: Vec<&String> = o["metadata"].as_object().unwrap().keys().collect();
        assert_eq!(order, ["annotations", "name", "namespace", "ownerReferences"]);
        assert_eq!(
            o,
            json!({"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": "app.config", "namespace": "shop",
                    "annotations": {"app.kubernetes.io/note": "kept"},
                    "ownerReferences": [{"kind": "Deployment", "name": "web", "uid": "live"}]},
                "data": {"app.properties": "a=1"}})
        );
    }

    #[test]
    fn content_never_stored_shows_its_hashes() {
        let row = RowColumns {
            api_version: "v1",
            kind: "Secret",
            namespace: Some("shop"),
            name: Some("db.creds"),
            mod_revision: 7,
            ..Default::default()
        };
        let fields: BTreeMap<FieldPath, [u8; FIELD_HASH_LEN]> = [
            (FieldPath::field("data"), [1; FIELD_HASH_LEN]),
            (FieldPath::fields(["data", "pass.word"]), [2; FIELD_HASH_LEN]),
            (FieldPath::field("type"), [3; FIELD_HASH_LEN]),
            (FieldPath::fields(["metadata", "labels"]), [4; FIELD_HASH_LEN]),
        ]
        .into_iter()
        .collect();
        let o = redacted_object(&row, &fields);
        assert_eq!(o["data"]["pass.word"], hashed(&[2; FIELD_HASH_LEN]));
        assert_eq!(o["type"], hashed(&[3; FIELD_HASH_LEN]));
        assert_eq!(o["metadata"]["name"], "db.creds");
        assert!(o["metadata"].get("labels").is_none());
    }
}
