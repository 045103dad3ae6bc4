//! `foreign-writes` against a real etcd: values put straight into etcd the
//! way a person with `etcdctl` would, between writes as kube-apiserver
//! makes them, are each a finding with their evidence; the apiserver's own
//! writes (protobuf built-ins, JSON CRDs and custom resources, its master
//! lease and Events) give none.

use crate::util::etcd::TestEtcd;
use crate::util::k8s::widget;
use crate::util::{findings, history, ok, snapshot, temp_db};
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

/// The apiserver as the audit test plays it: each write it makes is put
/// into etcd and logged as its audit backend logs it.
struct Logged<'a> {
    etcd: &'a TestEtcd,
    lines: Vec<String>,
    second: u32,
}

impl Logged<'_> {
    /// A create (or update) of `group`/`resource` `ns/name` at `level`,
    /// stored as `value`; `named: false` logs it as a `generateName`
    /// create, whose objectRef has no name. Returns its revision.
    #[allow(clippy::too_many_arguments)]
    fn write(
        &mut self,
        level: &str,
        verb: &str,
        (group, resource, ns, name): (&str, &str, &str, &str),
        named: bool,
        key: &str,
        value: &[u8],
    ) -> i64 {
        let revision = self.etcd.put(key, value);
        self.second += 1;
        let at = format!(
            "2026-11-29T08:{:02}:{:02}.250000Z",
            self.second / 60,
            self.second % 60
        );
        let mut object =
            json!({"resource": resource, "namespace": ns, "apiGroup": group, "apiVersion": "v1"});
        if named {
            object["name"] = json!(name);
        }
        let mut event = json!({"kind": "Event", "apiVersion": "audit.k8s.io/v1", "level": level,
            "auditID": format!("00000000-0000-0000-0000-{:012}", self.lines.len()),
            "stage": "ResponseComplete", "verb": verb, "requestURI": "/",
            "user": {"username": "system:serviceaccount:kube-system:replicaset-controller", "groups": ["system:serviceaccounts"]},
            "sourceIPs": ["192.0.2.7"], "objectRef": object,
            "responseStatus": {"metadata": {}, "code": if verb == "create" { 201 } else { 200 }},
            "requestReceivedTimestamp": at, "stageTimestamp": at});
        if level == "RequestResponse" {
            event["responseObject"] =
                json!({"metadata": {"name": name, "namespace": ns, "resourceVersion": revision.to_string()}});
        }
        self.lines.push(event.to_string());
        revision
    }
}

/// A ConfigMap as the apiserver stores it.
fn config_map(name: &str) -> Vec<u8> {
    stored(
        "v1",
        "ConfigMap",
        Some("ns"),
        name,
        json!({"data": {"app.properties": "a=b"}}),
    )
}

const RBAC: &str = "rbac.authorization.k8s.io";

/// Another kube-apiserver than the one whose log the test writes, as its
/// writes show in etcd.
#[derive(Clone, Copy, PartialEq)]
enum Another {
    None,
    /// Its master lease, renewed: another IP under `masterleases/`.
    MasterLease,
    /// Its identity Lease, renewed, in a database that records Leases.
    IdentityLease,
    /// An update it answered to an object the log holds updates of.
    Update,
}

/// The master lease of the apiserver at `ip`, as it stores it.
fn master_lease(ip: &str) -> Vec<u8> {
    encode_protobuf(&json!({"apiVersion": "v1", "kind": "Endpoints",
        "metadata": {"name": "kubernetes", "namespace": "default"},
        "subsets": [{"addresses": [{"ip": ip}], "ports": [{"port": 6443}]}]}))
    .unwrap()
}

/// Writes the apiserver logs between writes that went around it, whose
/// bytes are as the apiserver's own (a value copied from it), with
/// `another` apiserver writing in between or not. Returns the database
/// after `attribute` read the log, the log's path and the revisions put
/// around the apiserver (a RoleBinding, a ConfigMap, a Secret and a Pod
/// inside the log's span, a RoleBinding after it).
fn logged_with_writes_around(
    etcd: &TestEtcd,
    dir: &std::path::Path,
    another: Another,
) -> (std::path::PathBuf, String, [i64; 5]) {
    let mut api = Logged {
        etcd,
        lines: Vec::new(),
        second: 0,
    };
    fn rb(name: &str) -> (&str, &str, &str, &str) {
        (RBAC, "rolebindings", "ns", name)
    }
    api.write(
        "RequestResponse",
        "create",
        rb("rb-0"),
        true,
        "/registry/rolebindings/ns/rb-0",
        &role_binding("rb-0", "alice"),
    );
    api.write(
        "RequestResponse",
        "create",
        ("", "configmaps", "ns", "settings"),
        true,
        "/registry/configmaps/ns/settings",
        &config_map("settings"),
    );
    // A Secret at Metadata level (no response, joined by name and time) and
    // a Pod created from generateName at Metadata level (no name at all).
    api.write(
        "Metadata",
        "create",
        ("", "secrets", "ns", "s-0"),
        true,
        "/registry/secrets/ns/s-0",
        &secret("s-0"),
    );
    api.write(
        "Metadata",
        "create",
        ("", "pods", "ns", "web-x7k2p"),
        false,
        "/registry/pods/ns/web-x7k2p",
        &pod("web-x7k2p", "web:1"),
    );
    // The endpoints controller's Endpoints, logged: the log holds creates
    // of `endpoints`, as the master lease is stored, which it never logs.
    let endpoints = stored("v1", "Endpoints", Some("ns"), "web", json!({"subsets": []}));
    api.write(
        "RequestResponse",
        "create",
        ("", "endpoints", "ns", "web"),
        true,
        "/registry/services/endpoints/ns/web",
        &endpoints,
    );
    // The apiserver renews its master lease, unaudited (it writes it
    // straight to storage).
    etcd.put("/registry/masterleases/192.0.2.1", &master_lease("192.0.2.1"));
    let replayed = etcd.put(
        "/registry/rolebindings/ns/replayed",
        &role_binding("replayed", "mallory@example.com"),
    );
    let planted = etcd.put("/registry/configmaps/ns/planted", &config_map("planted"));
    // A Secret and a Pod as the apiserver would store them. The Pod is in
    // another namespace: in `ns` the unnamed create the log holds could be
    // any Pod's.
    let secret = etcd.put("/registry/secrets/ns/planted-token", &secret("planted-token"));
    let miner = stored(
        "v1",
        "Pod",
        Some("batch"),
        "miner",
        json!({"spec": {"containers": [{"name": "main", "image": "miner:1"}]}}),
    );
    let pod = etcd.put("/registry/pods/batch/miner", &miner);
    etcd.put("/registry/masterleases/192.0.2.1", &master_lease("192.0.2.1"));
    match another {
        Another::None => {}
        Another::MasterLease => {
            etcd.put("/registry/masterleases/192.0.2.2", &master_lease("192.0.2.2"));
        }
        Another::Update => {
            etcd.put("/registry/rolebindings/ns/rb-0", &role_binding("rb-0", "eve"));
        }
        Another::IdentityLease => {
            let lease = stored(
                "coordination.k8s.io/v1",
                "Lease",
                Some("kube-system"),
                "apiserver-b7x2",
                json!({"spec": {}}),
            );
            etcd.put("/registry/leases/kube-system/apiserver-b7x2", &lease);
        }
    }
    api.write(
        "RequestResponse",
        "update",
        rb("rb-0"),
        true,
        "/registry/rolebindings/ns/rb-0",
        &role_binding("rb-0", "bob"),
    );
    api.write(
        "RequestResponse",
        "create",
        rb("rb-1"),
        true,
        "/registry/rolebindings/ns/rb-1",
        &role_binding("rb-1", "carol"),
    );
    let late = etcd.put(
        "/registry/rolebindings/ns/late",
        &role_binding("late", "mallory@example.com"),
    );
    let log = dir.join("audit.log");
    std::fs::write(&log, api.lines.join("\n") + "\n").unwrap();
    let db = dir.join("inspector.db");
    let record = match another {
        Another::IdentityLease => vec!["--no-analyze", "--exclude-resource", "none"],
        _ => vec!["--no-analyze"],
    };
    ok(snapshot(etcd, &db, &record));
    let log = log.to_str().unwrap().to_string();
    ok(crate::util::inspector(&db, &["attribute", "--audit-log", &log]));
    (db, log, [replayed, planted, secret, pod, late])
}

#[test]
fn creates_no_audited_request_explains_are_findings_where_a_log_covers_them() {
    let etcd = TestEtcd::start();
    let dir = tempfile::tempdir().unwrap();
    let (db, log, [replayed, planted, secret, pod, late]) =
        logged_with_writes_around(&etcd, dir.path(), Another::None);
    let found = findings(&db, "foreign-writes");
    let on = |key: &str| found.iter().filter(|f| f["keys"][0] == key).collect::<Vec<_>>();
    assert_eq!(found.len(), 4, "{found:#?}");
    for (key, revision, severity) in [
        ("/registry/rolebindings/ns/replayed", replayed, "high"),
        ("/registry/configmaps/ns/planted", planted, "medium"),
        ("/registry/secrets/ns/planted-token", secret, "high"),
        ("/registry/pods/batch/miner", pod, "medium"),
    ] {
        let f = on(key);
        assert_eq!(f.len(), 1, "{key}: {found:#?}");
        assert_eq!(f[0]["severity"], severity, "{key}");
        assert_eq!(f[0]["revisions"], json!([revision]), "{key}");
        assert_eq!(signals(f[0]), ["unaudited"], "{key}");
        let detail = f[0]["details"]["evidence"][0]["detail"].as_str().unwrap();
        assert!(
            detail.contains(&format!("no request in audit log {log} created it")),
            "{detail}"
        );
        assert!(detail.contains("(revisions 2 to "), "{detail}");
    }
    // After the log's last joined write, nothing covers the RoleBinding.
    assert!(
        on("/registry/rolebindings/ns/late").is_empty(),
        "{late}: {found:#?}"
    );

    // Without the log, the same bytes say nothing.
    let (_d, bare) = temp_db();
    ok(snapshot(&etcd, &bare, &[]));
    let found = findings(&bare, "foreign-writes");
    assert!(found.is_empty(), "{found:#?}");
}

#[test]
fn a_log_of_one_apiserver_among_two_covers_nothing() {
    for another in [Another::MasterLease, Another::IdentityLease, Another::Update] {
        let etcd = TestEtcd::start();
        let dir = tempfile::tempdir().unwrap();
        let (db, _, [replayed, ..]) = logged_with_writes_around(&etcd, dir.path(), another);
        let found = findings(&db, "foreign-writes");
        assert!(found.is_empty(), "{found:#?}");
        // Not for want of a history or a log: the planted create is stored,
        // and the log's requests were joined on both sides of it.
        let planted = history(&db, "/registry/rolebindings/ns/replayed");
        assert_eq!(planted[0]["mod_revision"], replayed, "{planted:#?}");
        let joined: Vec<i64> = history(&db, "/registry/rolebindings/ns/rb-0")
            .iter()
            .filter(|r| r["written_by"]["match"] == "exact")
            .map(|r| r["mod_revision"].as_i64().unwrap())
            .collect();
        assert!(
            joined.first() < Some(&replayed) && joined.last() > Some(&replayed),
            "{joined:?} around {replayed}"
        );
    }
}
