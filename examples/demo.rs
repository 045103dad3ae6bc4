//! The built-in example: starts the etcd the `etcd-bin-vendored` crate
//! ships, writes a small cluster exactly as kube-apiserver stores it
//! (protobuf built-ins, JSON and CBOR custom resources, a Secret, a Lease),
//! snapshots it, plays an incident (a delete and recreate, an identical
//! rewrite, a scale flip-flop, heartbeats, a compaction), snapshots again and
//! shows what was recorded.
//!
//! Run: `cargo run --release --example demo`

#[path = "../tests/common/etcd.rs"]
#[allow(dead_code)]
mod etcd;

use anyhow::{Context, Result};
use clap::Parser;
use etcd_inspector::cli::Cli;
use etcd_inspector::decode::encode::{encode_cbor, encode_protobuf};
use serde_json::{json, Value};
use std::path::Path;

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

/// Runs one etcd-inspector command line, as a user would type it.
fn inspector(line: &str) -> Result<()> {
    println!("\n$ etcd-inspector {line}");
    let cli = Cli::try_parse_from(std::iter::once("etcd-inspector").chain(line.split_whitespace()))?;
    let status = etcd_inspector::cmd::dispatch(&cli)?;
    if status != 0 {
        println!("(exit status {status})");
    }
    Ok(())
}

fn main() -> Result<()> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/demo");
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    let db = dir.join("demo.sqlite");
    for suffix in ["", "-wal", "-shm", ".lock"] {
        let _ = std::fs::remove_file(format!("{}{suffix}", db.display()));
    }
    println!("Starting etcd (from the etcd-bin-vendored crate) ...");
    let etcd = etcd::TestEtcd::start();
    let ep = etcd.endpoint.clone();
    let pb = |v: &Value| encode_protobuf(v).expect("built-in object");

    // A small cluster; the Deployment was stored by an older apiserver.
    etcd.put("/registry/replicasets/shop/web-7d4b9c6f5d", &pb(&replicaset(3)));
    etcd.put(
        "/registry/deployments/shop/web",
        &pb(&deployment("apps/v1beta2", 3, 1)),
    );
    for (name, uid, ip) in [
        ("web-7d4b9c6f5d-x2kqp", "0b7f3d52-0001", "10.244.3.17"),
        ("web-7d4b9c6f5d-9fzvt", "0b7f3d52-0002", "10.244.1.4"),
        ("web-7d4b9c6f5d-q8w2n", "0b7f3d52-0003", "10.244.2.9"),
    ] {
        etcd.put(&format!("/registry/pods/shop/{name}"), &pb(&pod(name, uid, ip)));
    }
    etcd.put("/registry/configmaps/shop/web-config", &pb(&json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta("shop", "web-config", "c0f1"), "data": {"mode": "fast"}})));
    etcd.put("/registry/secrets/shop/db", &pb(&json!({"apiVersion": "v1", "kind": "Secret", "metadata": meta("shop", "db", "5ec7"), "type": "Opaque", "data": {"password": "aHVudGVyMg=="}})));
    etcd.put(
        "/registry/example.com/widgets/shop/blue",
        &json_value(&widget("blue", "77aa0c2d-0001")),
    );
    etcd.put(
        "/registry/example.com/widgets/shop/green",
        &encode_cbor(&widget("green", "77aa0c2d-0002")),
    );
    etcd.put(
        "/registry/leases/kube-node-lease/worker-3",
        &pb(&lease("2026-11-29T07:59:00.000000Z")),
    );

    let db_arg = db.display().to_string();
    inspector(&format!("--db {db_arg} snapshot --endpoints {ep}"))?;

    println!("\nHeartbeats, then the apiserver compacts etcd (history before it is lost) ...");
    let mut beat = 0;
    for i in 0..4 {
        beat = etcd.put(
            "/registry/leases/kube-node-lease/worker-3",
            &pb(&lease(&format!("2026-11-29T08:0{i}:00.000000Z"))),
        );
    }
    etcd.compact(beat - 1);
    println!("Playing an incident: a storage-version migration, a custom resource re-stored as CBOR, a pod deleted and");
    println!("recreated with a new UID, an identical rewrite, a retried create, a duplicated subject, a scale flip-flop ...");
    etcd.put(
        "/registry/deployments/shop/web",
        &pb(&deployment("apps/v1", 3, 1)),
    );
    etcd.put(
        "/registry/example.com/widgets/shop/blue",
        &encode_cbor(&widget("blue", "77aa0c2d-0001")),
    );
    let pod_key = "/registry/pods/shop/web-7d4b9c6f5d-x2kqp";
    etcd.delete(pod_key);
    etcd.put(
        pod_key,
        &pb(&pod("web-7d4b9c6f5d-x2kqp", "0b7f3d52-0004", "10.244.3.21")),
    );
    let cm = pb(
        &json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta("shop", "web-config", "c0f1"), "data": {"mode": "fast"}}),
    );
    etcd.put("/registry/configmaps/shop/web-config", &cm);
    // A Job with parallelism 1 gets two pods: its creator retried after a timeout.
    etcd.put(
        "/registry/jobs/shop/nightly-backup",
        &pb(&json!({"apiVersion": "batch/v1", "kind": "Job", "metadata": meta("shop", "nightly-backup", "b7c1-job"),
                    "spec": {"parallelism": 1, "template": {"spec": {"containers": [{"name": "backup", "image": "registry.example.com/tools/backup:7"}], "restartPolicy": "Never"}}}})),
    );
    etcd.put(
        "/registry/pods/shop/nightly-backup-4kq9z",
        &pb(&backup_pod("nightly-backup-4kq9z", "bk-0001")),
    );
    etcd.put(
        "/registry/pods/shop/nightly-backup-7xw2m",
        &pb(&backup_pod("nightly-backup-7xw2m", "bk-0002")),
    );
    // A RoleBinding that an automation appended the same subject to twice.
    etcd.put(
        "/registry/rolebindings/shop/deployers",
        &pb(&json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding", "metadata": meta("shop", "deployers", "rb01"),
                    "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "deployer"},
                    "subjects": [{"kind": "ServiceAccount", "name": "ci", "namespace": "shop"}, {"kind": "ServiceAccount", "name": "ci", "namespace": "shop"}]})),
    );
    for (i, replicas) in [5, 3, 5, 3, 5, 3].into_iter().enumerate() {
        etcd.put(
            "/registry/deployments/shop/web",
            &pb(&deployment("apps/v1", replicas, 2 + i as i64)),
        );
    }

    inspector(&format!("--db {db_arg} snapshot --endpoints {ep}"))?;
    inspector(&format!("--db {db_arg} runs"))?;
    inspector(&format!("--db {db_arg} history {pod_key}"))?;
    inspector(&format!(
        "--db {db_arg} history /registry/configmaps/shop/web-config"
    ))?;
    inspector(&format!(
        "--db {db_arg} history /registry/deployments/shop/web --diff"
    ))?;
    inspector(&format!("--db {db_arg} findings"))?;
    inspector(&format!("--db {db_arg} diff 1 2"))?;
    println!("\nThe same history, offline: download etcd's snapshot file and read it with no API calls ...");
    let offline = dir.join("demo-offline.sqlite");
    let saved = dir.join("etcd-snapshot.db");
    for path in [offline.clone(), saved.clone()] {
        let _ = std::fs::remove_file(&path);
    }
    inspector(&format!(
        "--db {} snapshot --endpoints {ep} --fetch-snapshot --save {}",
        offline.display(),
        saved.display()
    ))?;
    inspector(&format!("--db {} history {pod_key}", offline.display()))?;
    inspector(&format!("get /registry/secrets/shop/db --endpoints {ep} -o yaml"))?;
    inspector(&format!(
        "get /registry/example.com/widgets/shop/green --endpoints {ep} --show-envelope -o yaml"
    ))?;
    println!(
        "\nThe database is {}; explore it with `cargo run -- --db {} runs` or `history KEY`.",
        db.display(),
        db.display()
    );
    Ok(())
}
