//! The demo's cluster and incident, written exactly as kube-apiserver stores
//! them, and the findings they must produce. Shared by the demo and by the
//! test that checks the report lists every injected anomaly and nothing else
//! (`tests/it/report.rs`, which includes this file by path).

use etcd_inspector::decode::encode::{encode_cbor, encode_protobuf};
use serde_json::{json, Value};

/// Writes to the demo's etcd.
pub struct Etcd<'a> {
    pub put: &'a dyn Fn(&str, &[u8]) -> i64,
    pub delete: &'a dyn Fn(&str) -> i64,
    pub compact: &'a dyn Fn(i64),
}

/// Every finding the incident must produce, as (detector, key).
pub const EXPECTED: &[(&str, &str)] = &[
    ("duplicate-entries", "/registry/configmaps/shop/web-ca"),
    ("duplicate-entries", "/registry/rolebindings/shop/deployers"),
    ("encoding-only", "/registry/deployments/shop/web"),
    ("encoding-only", "/registry/example.com/widgets/shop/blue"),
    ("excess-siblings", "/registry/pods/shop/nightly-backup-7xw2m"),
    ("flapping", "/registry/deployments/shop/web"),
    ("generation-mismatch", "/registry/deployments/shop/api"),
    ("recreated", "/registry/pods/shop/web-7d4b9c6f5d-x2kqp"),
    ("rewrite", "/registry/configmaps/shop/web-config"),
    ("stuck-deletion", "/registry/configmaps/shop/legacy-settings"),
    ("dangling-owner", "/registry/pods/shop/report-28fj1"),
    ("prunable-fields", "/registry/example.com/gizmos/shop/small"),
    ("foreign-writes", "/registry/clusterrolebindings/backdoor"),
];

fn meta(ns: &str, name: &str, uid: &str) -> Value {
    json!({"name": name, "namespace": ns, "uid": uid, "creationTimestamp": "2026-11-29T07:50:00Z"})
}

fn deployment(api_version: &str, replicas: i64, generation: i64) -> Value {
    let mut m = meta("shop", "web", "9e1c2b3a-4d5e-4f60-8a7b-1c2d3e4f5a6b");
    m["generation"] = json!(generation);
    // Two writers own spec.replicas: a person with kubectl and an autoscaler;
    // each write stamps the writer's managedFields entry.
    let entry = |manager: &str, minute: i64| {
        json!({"manager": manager, "operation": "Update", "apiVersion": "apps/v1",
               "time": format!("2026-11-29T08:{minute:02}:00Z"), "fieldsType": "FieldsV1",
               "fieldsV1": {"f:spec": {"f:replicas": {}}}})
    };
    let (kubectl, hpa) = if replicas == 5 {
        (generation - 1, generation)
    } else {
        (generation, generation - 1)
    };
    m["managedFields"] = json!([
        entry("kubectl-client-side-apply", kubectl.max(0)),
        entry("hpa-controller", hpa.max(0))
    ]);
    json!({"apiVersion": api_version, "kind": "Deployment", "metadata": m,
           "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": "web"}},
                    "template": {"metadata": {"labels": {"app": "web"}},
                                 "spec": {"containers": [{"name": "web", "image": "registry.example.com/shop/web:1.42.0",
                                                          "resources": {"requests": {"cpu": "250m", "memory": "256Mi"}}}]}}},
           "status": {"observedGeneration": 1, "replicas": 3, "readyReplicas": 3}})
}

fn pod(name: &str, uid: &str, ip: &str) -> Value {
    let mut m = meta("shop", name, uid);
    m["generateName"] = json!("web-7d4b9c6f5d-");
    m["labels"] = json!({"app": "web", "pod-template-hash": "7d4b9c6f5d"});
    m["ownerReferences"] = json!([{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web-7d4b9c6f5d",
                                   "uid": "5c3a9d1e-8f0b-4e62-a6c4-7b2d9e0f1a23", "controller": true, "blockOwnerDeletion": true}]);
    m["managedFields"] = json!([{"manager": "kube-controller-manager", "operation": "Update", "apiVersion": "v1",
                                 "time": "2026-11-29T07:50:00Z", "fieldsType": "FieldsV1",
                                 "fieldsV1": {"f:metadata": {"f:generateName": {}, "f:labels": {"f:app": {}}}}}]);
    json!({"apiVersion": "v1", "kind": "Pod", "metadata": m,
           "spec": {"containers": [{"name": "web", "image": "registry.example.com/shop/web:1.42.0",
                                    "readinessProbe": {"httpGet": {"path": "/healthz", "port": 8080}}}],
                    "nodeName": "worker-3"},
           "status": {"phase": "Running", "podIP": ip}})
}

fn replicaset(replicas: i64) -> Value {
    json!({"apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": meta("shop", "web-7d4b9c6f5d", "5c3a9d1e-8f0b-4e62-a6c4-7b2d9e0f1a23"),
           "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": "web", "pod-template-hash": "7d4b9c6f5d"}}}})
}

/// A backup Job's pod; a client that retries its create after a timeout
/// makes two of them.
fn backup_pod(name: &str, uid: &str) -> Value {
    let mut m = meta("shop", name, uid);
    m["generateName"] = json!("nightly-backup-");
    m["ownerReferences"] = json!([{"apiVersion": "batch/v1", "kind": "Job", "name": "nightly-backup", "uid": "b7c1-job", "controller": true}]);
    m["managedFields"] = json!([{"manager": "backup-operator", "operation": "Update", "apiVersion": "v1", "time": "2026-11-29T08:01:00Z"}]);
    json!({"apiVersion": "v1", "kind": "Pod", "metadata": m,
           "spec": {"containers": [{"name": "backup", "image": "registry.example.com/tools/backup:7"}], "restartPolicy": "Never"}})
}

/// A ConfigMap a backup operator guards with a finalizer; `deleting` is
/// when someone deleted it.
fn legacy_settings(deleting: Option<&str>) -> Value {
    let mut m = meta("shop", "legacy-settings", "1e9a-0000-4000-8000-000000000001");
    m["finalizers"] = json!(["backup.example.com/snapshot-first"]);
    m["managedFields"] = json!([{"manager": "backup-operator", "operation": "Update", "apiVersion": "v1", "time": "2026-11-29T07:50:00Z",
                                 "fieldsType": "FieldsV1", "fieldsV1": {"f:metadata": {"f:finalizers": {".": {}, "v:\"backup.example.com/snapshot-first\"": {}}}}}]);
    if let Some(at) = deleting {
        m["deletionTimestamp"] = json!(at);
        m["deletionGracePeriodSeconds"] = json!(0);
    }
    json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": m, "data": {"mode": "legacy"}})
}

/// A report Job's pod, owned by the Job `report`.
fn report_pod() -> Value {
    let mut m = meta("shop", "report-28fj1", "4e90-0000-4000-8000-000000000001");
    m["ownerReferences"] = json!([{"apiVersion": "batch/v1", "kind": "Job", "name": "report", "uid": "4e90-job", "controller": true}]);
    json!({"apiVersion": "v1", "kind": "Pod", "metadata": m,
           "spec": {"containers": [{"name": "report", "image": "registry.example.com/tools/report:3"}], "restartPolicy": "Never"},
           "status": {"phase": "Succeeded"}})
}

fn lease(renew: &str) -> Value {
    json!({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": meta("kube-node-lease", "worker-3", "0d0c0b0a-0000-4000-8000-000000000003"),
           "spec": {"holderIdentity": "worker-3", "leaseDurationSeconds": 40, "renewTime": renew}})
}

fn widget(name: &str, uid: &str) -> Value {
    json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": meta("shop", name, uid),
           "spec": {"size": 3, "colour": name}})
}

fn json_value(v: &Value) -> Vec<u8> {
    let mut b = serde_json::to_vec(v).expect("JSON");
    b.push(b'\n');
    b
}

fn pb(v: &Value) -> Vec<u8> {
    encode_protobuf(v).expect("a built-in object of the schema")
}

fn namespace(name: &str, uid: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "uid": uid, "creationTimestamp": "2026-11-01T00:00:00Z"},
           "spec": {"finalizers": ["kubernetes"]}, "status": {"phase": "Active"}})
}

/// A Deployment whose status is written by the controller (`observed`).
fn api_deployment(observed: i64) -> Value {
    let mut m = meta("shop", "api", "a11e-0000-4000-8000-000000000001");
    m["generation"] = json!(3);
    json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": m,
           "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "api"}},
                    "template": {"metadata": {"labels": {"app": "api"}}, "spec": {"containers": [{"name": "api", "image": "registry.example.com/shop/api:2.1"}]}}},
           "status": {"observedGeneration": observed, "replicas": 2, "readyReplicas": 2}})
}

/// A ConfigMap owned by the web Deployment; an operator bug appends the
/// owner again.
fn web_ca(owners: usize) -> Value {
    let mut m = meta("shop", "web-ca", "ca00-0000-4000-8000-000000000001");
    let owner = json!({"apiVersion": "apps/v1", "kind": "Deployment", "name": "web", "uid": "9e1c2b3a-4d5e-4f60-8a7b-1c2d3e4f5a6b"});
    m["ownerReferences"] = Value::Array(vec![owner; owners]);
    json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": m, "data": {"ca.crt": "-----BEGIN CERTIFICATE-----\nMIIB...\n-----END CERTIFICATE-----"}})
}

/// The cluster before the incident.
pub fn cluster(etcd: &Etcd) {
    (etcd.put)("/registry/namespaces/shop", &pb(&namespace("shop", "5e0b-ns")));
    (etcd.put)(
        "/registry/namespaces/kube-node-lease",
        &pb(&namespace("kube-node-lease", "1ea5-ns")),
    );
    // The Deployment was stored by an older apiserver (apps/v1beta2).
    (etcd.put)(
        "/registry/deployments/shop/web",
        &pb(&deployment("apps/v1beta2", 3, 1)),
    );
    (etcd.put)("/registry/replicasets/shop/web-7d4b9c6f5d", &pb(&replicaset(3)));
    for (name, uid, ip) in [
        ("web-7d4b9c6f5d-x2kqp", "0b7f3d52-0001", "10.244.3.17"),
        ("web-7d4b9c6f5d-9fzvt", "0b7f3d52-0002", "10.244.1.4"),
        ("web-7d4b9c6f5d-q8w2n", "0b7f3d52-0003", "10.244.2.9"),
    ] {
        (etcd.put)(&format!("/registry/pods/shop/{name}"), &pb(&pod(name, uid, ip)));
    }
    (etcd.put)("/registry/deployments/shop/api", &pb(&api_deployment(3)));
    (etcd.put)(
        "/registry/services/specs/shop/web",
        &pb(
            &json!({"apiVersion": "v1", "kind": "Service", "metadata": meta("shop", "web", "5e4c-0001"),
                    "spec": {"selector": {"app": "web"}, "ports": [{"name": "http", "port": 80, "targetPort": 8080, "protocol": "TCP"}],
                             "clusterIP": "10.96.12.7", "type": "ClusterIP"}}),
        ),
    );
    (etcd.put)(
        "/registry/configmaps/shop/web-config",
        &pb(
            &json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta("shop", "web-config", "c0f1"), "data": {"mode": "fast"}}),
        ),
    );
    (etcd.put)("/registry/configmaps/shop/web-ca", &pb(&web_ca(1)));
    (etcd.put)(
        "/registry/secrets/shop/db",
        &pb(
            &json!({"apiVersion": "v1", "kind": "Secret", "metadata": meta("shop", "db", "5ec7"), "type": "Opaque", "data": {"password": "aHVudGVyMg=="}}),
        ),
    );
    (etcd.put)(
        "/registry/apiextensions.k8s.io/customresourcedefinitions/widgets.example.com",
        &json_value(
            &json!({"apiVersion": "apiextensions.k8s.io/v1beta1", "kind": "CustomResourceDefinition",
            "metadata": {"name": "widgets.example.com", "uid": "c4d0-0001", "generation": 1, "creationTimestamp": "2026-11-01T00:00:00Z"},
            "spec": {"group": "example.com", "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList"},
                     "scope": "Namespaced", "versions": [{"name": "v1", "served": true, "storage": true,
                        "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}]},
            "status": {"acceptedNames": {"plural": "widgets", "kind": "Widget"}, "storedVersions": ["v1"]}}),
        ),
    );
    (etcd.put)(
        "/registry/example.com/widgets/shop/blue",
        &json_value(&widget("blue", "77aa0c2d-0001")),
    );
    (etcd.put)(
        "/registry/example.com/widgets/shop/green",
        &encode_cbor(&widget("green", "77aa0c2d-0002")),
    );
    (etcd.put)(
        "/registry/leases/kube-node-lease/worker-3",
        &pb(&lease("2026-11-29T07:59:00.000000Z")),
    );
    (etcd.put)(
        "/registry/configmaps/shop/legacy-settings",
        &pb(&legacy_settings(None)),
    );
    (etcd.put)(
        "/registry/jobs/shop/report",
        &pb(
            &json!({"apiVersion": "batch/v1", "kind": "Job", "metadata": meta("shop", "report", "4e90-job"),
                    "spec": {"parallelism": 1, "template": {"spec": {"containers": [{"name": "report", "image": "registry.example.com/tools/report:3"}], "restartPolicy": "Never"}}}}),
        ),
    );
    (etcd.put)("/registry/pods/shop/report-28fj1", &pb(&report_pod()));
    // A CRD with a structural schema: spec.size and spec.colour.
    (etcd.put)(
        "/registry/apiextensions.k8s.io/customresourcedefinitions/gizmos.example.com",
        &json_value(
            &json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": "gizmos.example.com", "uid": "c4d0-0002", "generation": 1, "creationTimestamp": "2026-11-01T00:00:00Z"},
            "spec": {"group": "example.com", "names": {"plural": "gizmos", "singular": "gizmo", "kind": "Gizmo", "listKind": "GizmoList"},
                     "scope": "Namespaced", "versions": [{"name": "v1", "served": true, "storage": true,
                        "schema": {"openAPIV3Schema": {"type": "object", "properties": {"spec": {"type": "object",
                            "properties": {"size": {"type": "integer"}, "colour": {"type": "string"}}}}}}}]},
            "status": {"acceptedNames": {"plural": "gizmos", "kind": "Gizmo"}, "storedVersions": ["v1"]}}),
        ),
    );
}

/// The incident: heartbeats and a compaction, then every injected anomaly.
pub fn incident(etcd: &Etcd) {
    let mut beat = 0;
    for i in 0..4 {
        beat = (etcd.put)(
            "/registry/leases/kube-node-lease/worker-3",
            &pb(&lease(&format!("2026-11-29T08:0{i}:00.000000Z"))),
        );
    }
    (etcd.compact)(beat - 1);
    // A Job is deleted, but its pod stays: the garbage collector never
    // removed it.
    (etcd.delete)("/registry/jobs/shop/report");
    // Someone deletes a ConfigMap; the backup operator that owns its
    // finalizer is gone, so it never goes away.
    (etcd.put)(
        "/registry/configmaps/shop/legacy-settings",
        &pb(&legacy_settings(Some("2026-11-29T08:05:00Z"))),
    );
    // A custom resource written straight to etcd with a typo: the next
    // write through the API drops `colr` silently.
    (etcd.put)(
        "/registry/example.com/gizmos/shop/small",
        &json_value(
            &json!({"apiVersion": "example.com/v1", "kind": "Gizmo", "metadata": meta("shop", "small", "91a0-0001"),
                            "spec": {"size": 1, "colr": "red"}}),
        ),
    );
    // A storage-version migration rewrites the Deployment unchanged.
    (etcd.put)(
        "/registry/deployments/shop/web",
        &pb(&deployment("apps/v1", 3, 1)),
    );
    // The CBOR storage gate is switched on: a custom resource is re-stored.
    (etcd.put)(
        "/registry/example.com/widgets/shop/blue",
        &encode_cbor(&widget("blue", "77aa0c2d-0001")),
    );
    // A pod is deleted and created again under its name.
    let pod_key = "/registry/pods/shop/web-7d4b9c6f5d-x2kqp";
    (etcd.delete)(pod_key);
    (etcd.put)(
        pod_key,
        &pb(&pod("web-7d4b9c6f5d-x2kqp", "0b7f3d52-0004", "10.244.3.21")),
    );
    // A controller writes the same ConfigMap back byte for byte.
    (etcd.put)(
        "/registry/configmaps/shop/web-config",
        &pb(
            &json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta("shop", "web-config", "c0f1"), "data": {"mode": "fast"}}),
        ),
    );
    // A Job with parallelism 1 gets two pods: its creator retried after a timeout.
    (etcd.put)(
        "/registry/jobs/shop/nightly-backup",
        &pb(
            &json!({"apiVersion": "batch/v1", "kind": "Job", "metadata": meta("shop", "nightly-backup", "b7c1-job"),
                    "spec": {"parallelism": 1, "template": {"spec": {"containers": [{"name": "backup", "image": "registry.example.com/tools/backup:7"}], "restartPolicy": "Never"}}}}),
        ),
    );
    (etcd.put)(
        "/registry/pods/shop/nightly-backup-4kq9z",
        &pb(&backup_pod("nightly-backup-4kq9z", "bk-0001")),
    );
    (etcd.put)(
        "/registry/pods/shop/nightly-backup-7xw2m",
        &pb(&backup_pod("nightly-backup-7xw2m", "bk-0002")),
    );
    // Automation appends the same subject to a RoleBinding, and an operator
    // the same owner to a ConfigMap.
    (etcd.put)(
        "/registry/rolebindings/shop/deployers",
        &pb(
            &json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding", "metadata": meta("shop", "deployers", "rb01"),
                    "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "deployer"},
                    "subjects": [{"kind": "ServiceAccount", "name": "ci", "namespace": "shop"}, {"kind": "ServiceAccount", "name": "ci", "namespace": "shop"}]}),
        ),
    );
    (etcd.put)("/registry/configmaps/shop/web-ca", &pb(&web_ca(2)));
    // Someone holding etcd's client certificate grants themselves
    // cluster-admin with `etcdctl put` and JSON typed by hand: no admission,
    // no RBAC check, no audit event; the apiserver serves it all the same.
    (etcd.put)(
        "/registry/clusterrolebindings/backdoor",
        &serde_json::to_vec_pretty(&json!({
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRoleBinding",
            "metadata": {"name": "backdoor"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "cluster-admin"},
            "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "mallory@example.com"}]
        }))
        .expect("JSON"),
    );
    // A stale status writer sets observedGeneration back.
    (etcd.put)("/registry/deployments/shop/api", &pb(&api_deployment(2)));
    // kubectl and an autoscaler fight over the web Deployment's replicas.
    for (i, replicas) in [5, 3, 5, 3, 5, 3].into_iter().enumerate() {
        (etcd.put)(
            "/registry/deployments/shop/web",
            &pb(&deployment("apps/v1", replicas, 2 + i as i64)),
        );
    }
}
