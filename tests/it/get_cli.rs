//! `etcd-inspector get` against a real etcd started by the test.

use crate::util::etcd::TestEtcd;
use crate::util::{closed_endpoint, json, one_line_error, run_inspector, stderr};
use etcd_inspector::decode::encode::encode_protobuf;
use serde_json::{json, Value};

fn config_map(data: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap",
           "metadata": {"name": "settings", "namespace": "shop", "uid": "5f1e0c2a-0000-4000-8000-000000000001",
                        "creationTimestamp": "2026-11-29T08:00:00Z"},
           "data": {"mode": data}})
}

#[test]
fn get_decodes_current_and_past_revisions() {
    let etcd = TestEtcd::start();
    let key = "/registry/configmaps/shop/settings";
    let first = etcd.put(key, &encode_protobuf(&config_map("slow")).unwrap());
    let second = etcd.put(key, &encode_protobuf(&config_map("fast")).unwrap());

    let out = run_inspector(
        &["get", key, "--endpoints", &etcd.endpoint, "--show-envelope"],
        None,
    );
    let obj = json(&out);
    assert_eq!(obj["data"]["mode"], "fast");
    assert_eq!(obj["metadata"]["resourceVersion"], second.to_string());
    let err = stderr(&out);
    assert!(
        err.contains(&format!("revision: create {first} mod {second} version 2")),
        "{err}"
    );
    assert!(
        err.contains("resource: configmaps") && err.contains("encoding: protobuf"),
        "{err}"
    );

    // Endpoints from the environment, as etcdctl reads them.
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_etcd-inspector"))
        .args(["get", key, "--rev", &first.to_string(), "-o", "yaml"])
        .env("ETCDCTL_ENDPOINTS", &etcd.endpoint)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let obj: Value = serde_yaml_ng::from_slice(&out.stdout).unwrap();
    assert_eq!(
        (
            obj["data"]["mode"].as_str(),
            obj["metadata"]["resourceVersion"].as_str()
        ),
        (Some("slow"), Some(first.to_string().as_str()))
    );
}

#[test]
fn get_reports_missing_keys_and_unreachable_etcd_in_one_line() {
    let etcd = TestEtcd::start();
    let out = run_inspector(
        &["get", "/registry/pods/none/such", "--endpoints", &etcd.endpoint],
        None,
    );
    assert_eq!(
        one_line_error(&out).trim(),
        "error: key /registry/pods/none/such not found"
    );

    let endpoint = closed_endpoint();
    let out = run_inspector(
        &[
            "get",
            "/registry/pods/a/b",
            "--endpoints",
            &endpoint,
            "--dial-timeout",
            "2s",
        ],
        None,
    );
    let err = one_line_error(&out);
    assert!(
        err.contains(&format!("cannot connect to etcd at {endpoint}")),
        "{err}"
    );
}
