//! `foreign-writes` against a real etcd: values put straight into etcd the
//! way a person with `etcdctl` would, between writes as kube-apiserver
//! makes them, are each a finding with their evidence; the apiserver's own
//! writes (protobuf built-ins, JSON CRDs and custom resources, its master
//! lease and Events) give none.

use crate::util::etcd::TestEtcd;
use crate::util::k8s::widget;
use crate::util::{findings, ok, snapshot, temp_db};
use etcd_inspector::decode::encode::encode_protobuf;
use serde_json::{json, Value};

const CREATED: &str = "2026-11-29T08:00:00Z";

/// `object` as kube-apiserver stores it: protobuf, with the uid and
/// creationTimestamp its create sets, and no resourceVersion.
fn stored(api_version: &str, kind: &str, namespace: Option<&str>, name: &str, rest: Value) -> Vec<u8> {
    let mut meta = json!({"name": name, "uid": format!("uid-{name}"), "creationTimestamp": CREATED});
    if let Some(ns) = namespace {
        meta["namespace"] = json!(ns);
    }
    let mut object = json!({"apiVersion": api_version, "kind": kind, "metadata": meta});
    for (k, v) in rest.as_object().unwrap() {
        object[k] = v.clone();
    }
    encode_protobuf(&object).unwrap()
}

fn role_binding(name: &str, user: &str) -> Vec<u8> {
    stored(
        "rbac.authorization.k8s.io/v1",
        "RoleBinding",
        Some("ns"),
        name,
        json!({"roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "view"},
               "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": user}]}),
    )
}

fn pod(name: &str, image: &str) -> Vec<u8> {
    stored(
        "v1",
        "Pod",
        Some("ns"),
        name,
        json!({"spec": {"containers": [{"name": "main", "image": image}]}}),
    )
}

fn secret(name: &str) -> Vec<u8> {
    stored(
        "v1",
        "Secret",
        Some("ns"),
        name,
        json!({"type": "Opaque", "data": {"k": "dg=="}}),
    )
}

/// The findings' signals, in order.
fn signals(finding: &Value) -> Vec<&str> {
    finding["details"]["evidence"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["signal"].as_str().unwrap())
        .collect()
}

#[test]
fn writes_around_the_apiserver_are_findings_with_their_evidence() {
    let etcd = TestEtcd::start();
    let (_dir, db) = temp_db();
    // What the apiserver wrote.
    for (i, user) in ["alice", "bob", "carol"].iter().enumerate() {
        etcd.put(
            &format!("/registry/rolebindings/ns/rb-{i}"),
            &role_binding(&format!("rb-{i}"), user),
        );
    }
    etcd.put("/registry/secrets/ns/s-0", &secret("s-0"));
    etcd.put("/registry/secrets/ns/s-1", &secret("s-1"));
    etcd.put("/registry/pods/ns/web", &pod("web", "web:1"));
    etcd.put("/registry/pods/ns/api", &pod("api", "api:1"));

    // A RoleBinding granting cluster-admin, typed as a person types JSON:
    // spaces after the colons, no trailing newline, no uid.
    let backdoor = etcd.put(
        "/registry/rolebindings/ns/backdoor",
        br#"{"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding", "metadata": {"name": "backdoor", "namespace": "ns"}, "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "cluster-admin"}, "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "mallory@example.com"}]}"#,
    );
    // A Secret as `echo '<json>' | etcdctl put` writes it: compact JSON and
    // a newline, with a uid and creationTimestamp; only its encoding among
    // protobuf Secrets gives it away.
    let mut planted = serde_json::to_vec(&json!({"apiVersion": "v1", "kind": "Secret",
        "metadata": {"name": "planted", "namespace": "ns", "uid": "uid-planted", "creationTimestamp": CREATED},
        "type": "Opaque", "data": {"token": "c2VjcmV0"}}))
    .unwrap();
    planted.push(b'\n');
    let planted = etcd.put("/registry/secrets/ns/planted", &planted);
    // A Pod's protobuf edited and put back with its resourceVersion kept
    // (as `etcdctl get -w json` | edit | `etcdctl put` does).
    let mut edited: Value = json!({"apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "web", "namespace": "ns", "uid": "uid-web", "creationTimestamp": CREATED,
                     "resourceVersion": "6"},
        "spec": {"containers": [{"name": "main", "image": "evil:1"}]}});
    let tampered = etcd.put("/registry/pods/ns/web", &encode_protobuf(&edited).unwrap());
    // The apiserver writes the Pod again (the kubelet's status update):
    // nothing foreign in that revision.
    edited["metadata"]
        .as_object_mut()
        .unwrap()
        .remove("resourceVersion");
    edited["status"] = json!({"phase": "Running"});
    etcd.put("/registry/pods/ns/web", &encode_protobuf(&edited).unwrap());
    // A ConfigMap under one namespace's key naming another namespace.
    let moved = etcd.put(
        "/registry/configmaps/default/settings",
        &stored(
            "v1",
            "ConfigMap",
            Some("kube-system"),
            "settings",
            json!({"data": {"a": "b"}}),
        ),
    );
    // A ClusterRoleBinding key holding a Role.
    let wrong_kind = etcd.put(
        "/registry/clusterrolebindings/admins",
        &stored(
            "rbac.authorization.k8s.io/v1",
            "Role",
            None,
            "admins",
            json!({"rules": []}),
        ),
    );
    // More of what the apiserver writes after them.
    etcd.put("/registry/rolebindings/ns/rb-0", &role_binding("rb-0", "dave"));
    etcd.put("/registry/pods/ns/api", &pod("api", "api:2"));

    ok(snapshot(&etcd, &db, &[]));
    let found = findings(&db, "foreign-writes");
    let by_key = |key: &str| -> Vec<&Value> { found.iter().filter(|f| f["keys"][0] == key).collect() };
    assert_eq!(found.len(), 5, "{found:#?}");

    let rb = by_key("/registry/rolebindings/ns/backdoor");
    assert_eq!(rb.len(), 1);
    assert_eq!(rb[0]["revisions"], json!([backdoor]));
    assert_eq!(rb[0]["severity"], "high");
    assert_eq!(signals(rb[0]), ["json-format", "create-metadata", "encoding"]);
    assert_eq!(
        rb[0]["summary"],
        format!("RoleBinding ns/backdoor at revision {backdoor} was not written by kube-apiserver (json-format, create-metadata, encoding): JSON with whitespace between tokens and without the trailing newline; kube-apiserver writes compact JSON and one newline")
    );

    let s = by_key("/registry/secrets/ns/planted");
    assert_eq!(s.len(), 1);
    assert_eq!(
        (&s[0]["revisions"], &s[0]["severity"]),
        (&json!([planted]), &json!("high"))
    );
    assert_eq!(signals(s[0]), ["encoding"]);
    assert_eq!(
        s[0]["details"]["evidence"][0]["detail"],
        "stored as json among secrets stored as protobuf; kube-apiserver stores built-in resources in one media type"
    );
    // No finding shows a Secret's data.
    assert!(!serde_json::to_string(&found).unwrap().contains("c2VjcmV0"));

    let p = by_key("/registry/pods/ns/web");
    assert_eq!(p.len(), 1, "the apiserver's update after it is not foreign");
    assert_eq!(
        (&p[0]["revisions"], &p[0]["severity"]),
        (&json!([tampered]), &json!("medium"))
    );
    assert_eq!(signals(p[0]), ["resource-version"]);
    assert_eq!(
        p[0]["details"]["evidence"][0]["detail"],
        "the value holds metadata.resourceVersion \"6\", which kube-apiserver clears before it stores"
    );

    let c = by_key("/registry/configmaps/default/settings");
    assert_eq!(c.len(), 1);
    assert_eq!(
        (&c[0]["revisions"], &c[0]["severity"]),
        (&json!([moved]), &json!("medium"))
    );
    assert_eq!(signals(c[0]), ["namespace"]);
    assert_eq!(
        c[0]["details"]["evidence"][0]["detail"],
        "metadata.namespace is \"kube-system\", the key's namespace is \"default\""
    );

    let k = by_key("/registry/clusterrolebindings/admins");
    assert_eq!(k.len(), 1);
    assert_eq!(
        (&k[0]["revisions"], &k[0]["severity"]),
        (&json!([wrong_kind]), &json!("high"))
    );
    assert_eq!(signals(k[0]), ["kind"]);
}

#[test]
fn the_apiserver_s_own_writes_give_none() {
    let etcd = TestEtcd::start();
    let (_dir, db) = temp_db();
    etcd.put("/registry/rolebindings/ns/rb", &role_binding("rb", "alice"));
    etcd.put("/registry/rolebindings/ns/rb", &role_binding("rb", "bob"));
    etcd.put("/registry/pods/ns/web", &pod("web", "web:1"));
    etcd.put("/registry/secrets/ns/s", &secret("s"));
    etcd.put(
        "/registry/minions/node-1",
        &stored(
            "v1",
            "Node",
            None,
            "node-1",
            json!({"spec": {"podCIDR": "10.0.0.0/24"}}),
        ),
    );
    etcd.put(
        "/registry/deployments/ns/old",
        &stored(
            "extensions/v1beta1",
            "Deployment",
            Some("ns"),
            "old",
            json!({"spec": {"replicas": 1}}),
        ),
    );
    // Events of either group are stored as core Events.
    etcd.put(
        "/registry/events/ns/web.1",
        &stored("v1", "Event", Some("ns"), "web.1", json!({"reason": "Started"})),
    );
    // The apiserver's master lease: built by hand, no uid, named by IP.
    etcd.put(
        "/registry/masterleases/10.0.0.1",
        &encode_protobuf(&json!({"apiVersion": "v1", "kind": "Endpoints",
            "metadata": {"name": "kubernetes", "namespace": "default", "generation": 3}}))
        .unwrap(),
    );
    // CRDs and custom resources are JSON, as Go's encoder writes it.
    let mut crd = serde_json::to_vec(&json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com", "uid": "u-crd", "creationTimestamp": CREATED},
        "spec": {"group": "example.com", "names": {"plural": "widgets", "kind": "Widget"}, "scope": "Namespaced"}}))
    .unwrap();
    crd.push(b'\n');
    etcd.put(
        "/registry/apiextensions.k8s.io/customresourcedefinitions/widgets.example.com",
        &crd,
    );
    etcd.put("/registry/example.com/widgets/ns/w", &widget("ns", "w", "u-w", 1));
    etcd.delete("/registry/pods/ns/web");
    ok(snapshot(&etcd, &db, &[]));
    let found = findings(&db, "foreign-writes");
    assert!(found.is_empty(), "{found:#?}");
}
