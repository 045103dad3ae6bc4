//! The built-in example: writes values exactly as kube-apiserver stores
//! them in etcd (protobuf built-ins, a JSON and a CBOR custom resource, an
//! encrypted Secret, a corrupted value) into a folder, then decodes each
//! with `etcd-inspector decode`, as a user would.
//!
//! Run: `cargo run --release --example demo`

use anyhow::{Context, Result};
use etcd_inspector::cli::{DecodeArgs, Format, ViewArgs};
use etcd_inspector::decode::encode::{encode_cbor, encode_protobuf};
use etcd_inspector::decode::key::DEFAULT_PREFIX;
use serde_json::{json, Value};
use std::path::PathBuf;

/// A Pod as the apiserver stores it after scheduling: owner, managed
/// fields, probes, volumes, resources and status.
fn pod() -> Value {
    json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {
            "name": "web-7d4b9c6f5d-x2kqp", "generateName": "web-7d4b9c6f5d-", "namespace": "shop",
            "uid": "0b7f3d52-5a41-4c5e-9d8e-2f1f6f7b9a10", "creationTimestamp": "2026-11-29T07:58:12Z",
            "labels": {"app": "web", "pod-template-hash": "7d4b9c6f5d"},
            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web-7d4b9c6f5d",
                                 "uid": "5c3a9d1e-8f0b-4e62-a6c4-7b2d9e0f1a23", "controller": true, "blockOwnerDeletion": true}],
            "managedFields": [
                {"manager": "kube-controller-manager", "operation": "Update", "apiVersion": "v1", "time": "2026-11-29T07:58:12Z",
                 "fieldsType": "FieldsV1", "fieldsV1": {"f:metadata": {"f:generateName": {}, "f:labels": {"f:app": {}}}, "f:spec": {"f:containers": {"k:{\"name\":\"web\"}": {".": {}, "f:image": {}}}}}},
                {"manager": "kubelet", "operation": "Update", "apiVersion": "v1", "time": "2026-11-29T07:58:20Z",
                 "fieldsType": "FieldsV1", "fieldsV1": {"f:status": {"f:conditions": {}, "f:podIP": {}}}, "subresource": "status"}
            ]
        },
        "spec": {
            "volumes": [{"name": "config", "configMap": {"name": "web-config", "defaultMode": 420}}],
            "containers": [{
                "name": "web", "image": "registry.example.com/shop/web:1.42.0",
                "ports": [{"name": "http", "containerPort": 8080, "protocol": "TCP"}],
                "resources": {"requests": {"cpu": "250m", "memory": "256Mi"}, "limits": {"memory": "512Mi"}},
                "readinessProbe": {"httpGet": {"path": "/healthz", "port": "http", "scheme": "HTTP"}, "periodSeconds": 5},
                "volumeMounts": [{"name": "config", "mountPath": "/etc/web"}],
                "terminationMessagePath": "/dev/termination-log", "imagePullPolicy": "IfNotPresent"
            }],
            "restartPolicy": "Always", "terminationGracePeriodSeconds": 30, "dnsPolicy": "ClusterFirst",
            "serviceAccountName": "web", "nodeName": "worker-3", "schedulerName": "default-scheduler"
        },
        "status": {
            "phase": "Running", "podIP": "10.244.3.17", "podIPs": [{"ip": "10.244.3.17"}], "hostIP": "192.0.2.13",
            "startTime": "2026-11-29T07:58:12Z", "qosClass": "Burstable",
            "conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": "2026-11-29T07:58:20Z"}]
        }
    })
}

fn deployment() -> Value {
    json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "shop", "uid": "9e1c2b3a-4d5e-4f60-8a7b-1c2d3e4f5a6b", "generation": 4,
                     "creationTimestamp": "2026-11-20T09:00:00Z", "annotations": {"deployment.kubernetes.io/revision": "3"}},
        "spec": {
            "replicas": 3, "selector": {"matchLabels": {"app": "web"}},
            "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "25%", "maxSurge": 1}},
            "template": {"metadata": {"labels": {"app": "web"}},
                         "spec": {"containers": [{"name": "web", "image": "registry.example.com/shop/web:1.42.0"}]}},
            "revisionHistoryLimit": 10, "progressDeadlineSeconds": 600
        },
        "status": {"observedGeneration": 4, "replicas": 3, "readyReplicas": 3, "availableReplicas": 3, "updatedReplicas": 3}
    })
}

fn widget() -> Value {
    json!({"apiVersion": "example.com/v1", "kind": "Widget",
           "metadata": {"name": "blue", "namespace": "shop", "uid": "77aa0c2d-3b4e-4f5a-9b8c-0d1e2f3a4b5c", "generation": 2,
                        "creationTimestamp": "2026-11-28T12:00:00Z"},
           "spec": {"size": 3, "colour": "blue"}})
}

fn main() -> Result<()> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/demo");
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    let mut json_cr = serde_json::to_vec(&widget())?;
    json_cr.push(b'\n');
    let cbor_cr = encode_cbor(&widget());
    let mut encrypted = b"k8s:enc:aescbc:v1:key-2026-11:".to_vec();
    encrypted.extend((0u8..64).map(|i| i.wrapping_mul(73).wrapping_add(11)));
    let mut corrupted = encode_protobuf(&pod())?;
    corrupted.truncate(corrupted.len() * 2 / 3);

    let values: Vec<(&str, &str, Vec<u8>)> = vec![
        (
            "pod.pb",
            "/registry/pods/shop/web-7d4b9c6f5d-x2kqp",
            encode_protobuf(&pod())?,
        ),
        (
            "deployment.pb",
            "/registry/deployments/shop/web",
            encode_protobuf(&deployment())?,
        ),
        ("widget.json", "/registry/example.com/widgets/shop/blue", json_cr),
        ("widget.cbor", "/registry/example.com/widgets/shop/blue", cbor_cr),
        ("secret.enc", "/registry/secrets/shop/db-password", encrypted),
        (
            "pod-truncated.pb",
            "/registry/pods/shop/web-7d4b9c6f5d-x2kqp",
            corrupted,
        ),
    ];
    for (file, key, bytes) in values {
        let path = dir.join(file);
        std::fs::write(&path, &bytes)?;
        println!(
            "\n=== etcd-inspector decode {} --key {key} --show-envelope -o yaml",
            path.display()
        );
        let args = DecodeArgs {
            input: Some(path),
            key: Some(key.to_string()),
            view: ViewArgs {
                prefix: DEFAULT_PREFIX.to_string(),
                output: Format::Yaml,
                show_envelope: true,
                show_secrets: false,
            },
        };
        match etcd_inspector::cmd::decode::run(&args) {
            Ok(status) => println!("(exit status {status})"),
            Err(e) => println!("error: {e:#} (exit status 1)"),
        }
    }
    println!(
        "\nThe values are in {}; decode them yourself with `cargo run -- decode FILE`.",
        dir.display()
    );
    Ok(())
}
