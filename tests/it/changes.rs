//! Change classes, semantic and field hashes, and the `rewrite` and
//! `encoding-only` findings, against a real etcd.

use crate::util::etcd::TestEtcd;
use crate::util::k8s::secret;
use crate::util::{assert_secrets_nowhere, history, inspector, json, ok, snapshot, stderr, temp_db};
use etcd_inspector::decode::encode::encode_protobuf;
use serde_json::{json as j, Value};
use std::path::Path;

fn pod(labels: Value, ready: &str) -> Value {
    j!({"apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "web", "namespace": "shop", "uid": "u-web", "labels": labels, "creationTimestamp": "2026-11-29T08:00:00Z"},
        "spec": {"containers": [{"name": "web", "image": "web:1"}], "nodeName": "n1"},
        "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": ready}]}})
}

fn deployment(api_version: &str, replicas: i64) -> Value {
    j!({"apiVersion": api_version, "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "shop", "uid": "u-dep", "generation": 1},
        "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": "web"}},
                 "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "web", "image": "web:1"}]}}}})
}

fn json_value(v: &Value) -> Vec<u8> {
    let mut b = serde_json::to_vec(v).unwrap();
    b.push(b'\n');
    b
}

/// (change_class, change_cause, changed_paths) of each stored revision.
fn classes(db: &Path, key: &str) -> Vec<(String, Option<String>, Vec<String>)> {
    history(db, key)
        .iter()
        .map(|r| {
            (
                r["change_class"].as_str().unwrap_or("-").to_string(),
                r["change_cause"].as_str().map(str::to_string),
                r["changed_paths"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|p| p.as_str().unwrap().to_string())
                    .collect(),
            )
        })
        .collect()
}

/// Runs a snapshot and returns its summary.
fn snapshot_summary(etcd: &TestEtcd, db: &Path) -> String {
    stderr(&ok(snapshot(etcd, db, &[])))
}

fn class_of(c: &(String, Option<String>, Vec<String>)) -> (&str, Option<&str>) {
    (c.0.as_str(), c.1.as_deref())
}

#[test]
fn encodings_rewrites_and_field_changes_are_classified() {
    let etcd = TestEtcd::start();
    let (_dir, db) = temp_db();
    let labels = j!({"app": "web"});

    // The same Pod first stored as JSON, then as protobuf; then a real change.
    let key = "/registry/pods/shop/web";
    etcd.put(key, &json_value(&pod(labels.clone(), "True")));
    etcd.put(key, &encode_protobuf(&pod(labels.clone(), "True")).unwrap());
    etcd.put(key, &json_value(&pod(labels.clone(), "True")));
    etcd.put(
        key,
        &encode_protobuf(&pod(j!({"app": "web", "tier": "front"}), "True")).unwrap(),
    );
    // The same bytes twice, then the same content with other bytes.
    let pb = encode_protobuf(&pod(j!({"app": "web", "tier": "front"}), "True")).unwrap();
    etcd.put(key, &pb);
    etcd.put(
        key,
        &json_value(&pod(j!({"tier": "front", "app": "web"}), "True")),
    );
    etcd.put(key, b"{ \"kind\": \"Pod\", \"apiVersion\": \"v1\", \"metadata\": {\"namespace\": \"shop\", \"name\": \"web\", \"uid\": \"u-web\", \"labels\": {\"tier\": \"front\", \"app\": \"web\"}, \"creationTimestamp\": \"2026-11-29T08:00:00Z\"}, \"spec\": {\"nodeName\": \"n1\", \"containers\": [{\"image\": \"web:1\", \"name\": \"web\"}]}, \"status\": {\"conditions\": [{\"status\": \"True\", \"type\": \"Ready\"}], \"phase\": \"Running\"}}\n");
    // A condition change, then a spec change.
    etcd.put(
        key,
        &encode_protobuf(&pod(j!({"app": "web", "tier": "front"}), "False")).unwrap(),
    );

    // A storage-version migration of unchanged content, then one with a change.
    let dep = "/registry/deployments/shop/web";
    etcd.put(dep, &encode_protobuf(&deployment("apps/v1beta2", 3)).unwrap());
    etcd.put(dep, &encode_protobuf(&deployment("apps/v1", 3)).unwrap());
    etcd.put(dep, &encode_protobuf(&deployment("apps/v1beta2", 5)).unwrap());
    etcd.put(dep, &encode_protobuf(&deployment("apps/v1", 5)).unwrap());
    etcd.put(dep, &encode_protobuf(&deployment("apps/v1", 4)).unwrap());

    let summary = snapshot_summary(&etcd, &db);
    assert!(summary.contains("analyzed: 13 revisions classified"), "{summary}");

    let c = classes(&db, key);
    assert_eq!(class_of(&c[0]), ("create", None));
    assert_eq!(
        class_of(&c[1]),
        ("encoding-only", Some("media-type")),
        "JSON → protobuf of the same Pod"
    );
    assert_eq!(class_of(&c[2]), ("encoding-only", Some("media-type")));
    assert_eq!(
        class_of(&c[3]),
        ("metadata-only", None),
        "a label change is not encoding-only"
    );
    assert_eq!(c[3].2, vec!["metadata.labels"]);
    assert_eq!(class_of(&c[4]), ("rewrite", None), "the same bytes put twice");
    assert_eq!(class_of(&c[5]), ("encoding-only", Some("media-type")));
    assert_eq!(
        class_of(&c[6]),
        ("encoding-only", Some("serialization")),
        "other key order and whitespace, not a rewrite"
    );
    assert_eq!(class_of(&c[7]), ("status-only", None));
    assert_eq!(c[7].2, vec!["status.conditions"]);

    let d = classes(&db, dep);
    assert_eq!(
        class_of(&d[1]),
        ("encoding-only", Some("storage-version")),
        "apps/v1beta2 → apps/v1, same content"
    );
    assert_eq!(
        class_of(&d[2]),
        ("spec", None),
        "apps/v1 → apps/v1beta2 with a replicas change"
    );
    assert_eq!(d[2].2, vec!["spec.replicas"]);
    assert_eq!(class_of(&d[3]), ("encoding-only", Some("storage-version")));
    assert_eq!(class_of(&d[4]), ("spec", None));

    let h = history(&db, key);
    assert_eq!(h[0]["semantic_sha256"], h[1]["semantic_sha256"]);
    assert_ne!(h[0]["value_sha256"], h[1]["value_sha256"]);
    assert_ne!(h[2]["semantic_sha256"], h[3]["semantic_sha256"]);

    let findings = json(inspector(&db, &["findings", "-o", "json"]));
    let by = |detector: &str, key: &str| {
        findings
            .as_array()
            .unwrap()
            .iter()
            .find(|f| f["detector"] == detector && f["keys"][0] == key)
            .cloned()
    };
    let rewrite = by("rewrite", key).expect("a rewrite finding");
    assert_eq!(
        rewrite["summary"],
        "Pod shop/web written 1 time with byte-identical content (revision 6)"
    );
    assert_eq!(rewrite["severity"], "low");
    let enc = by("encoding-only", dep).expect("an encoding-only finding for the Deployment");
    assert_eq!(enc["severity"], "info", "a storage migration alone is expected");
    assert!(
        enc["summary"]
            .as_str()
            .unwrap()
            .contains("apps/v1beta2 → apps/v1"),
        "{}",
        enc["summary"]
    );
    assert!(by("rewrite", dep).is_none());

    let diff = json(inspector(&db, &["history", dep, "--diff", "-o", "json"]));
    assert_eq!(
        diff[2]["diff"],
        j!([{"path": "spec.replicas", "old": 3, "new": 5, "managers": []}])
    );
    let table = String::from_utf8_lossy(&ok(inspector(&db, &["history", dep, "--diff"])).stdout).into_owned();
    assert!(table.contains("spec.replicas: 5 → 4"), "{table}");
}

#[test]
fn secret_changes_show_as_field_changes_without_the_values() {
    let etcd = TestEtcd::start();
    let (_dir, db) = temp_db();
    let key = "/registry/secrets/shop/db";
    let (old, new) = ("first-Password-1", "second-Password-2");
    etcd.put(key, &secret("shop", "db", "u-s", old));
    etcd.put(key, &secret("shop", "db", "u-s", new));
    ok(snapshot(&etcd, &db, &[]));
    let c = classes(&db, key);
    assert_eq!(
        (class_of(&c[1]), c[1].2.clone()),
        (("spec", None), vec!["data.password".to_string()])
    );
    let diff = json(inspector(&db, &["history", key, "--diff", "-o", "json"]));
    assert_eq!(
        diff[1]["diff"],
        j!([{"path": "data.password", "old": "<redacted>", "new": "<redacted>", "managers": []}])
    );
    assert_eq!(
        assert_secrets_nowhere(&db, &[old, new]),
        2,
        "both revisions kept as keyed hashes, neither password anywhere"
    );
}

#[test]
fn ten_thousand_revisions_are_classified_in_one_pass() {
    let etcd = TestEtcd::start();
    let (_dir, db) = temp_db();
    // 100 keys × 100 revisions each.
    let mut items = Vec::new();
    for round in 0..100 {
        for k in 0..100 {
            let cm = j!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": format!("c{k}"), "namespace": "ns", "uid": format!("u{k}")},
                         "data": {"round": round.to_string()}});
            items.push((
                format!("/registry/configmaps/ns/c{k}"),
                encode_protobuf(&cm).unwrap(),
            ));
        }
    }
    etcd.put_many_sequential(&items);
    let summary = snapshot_summary(&etcd, &db);
    assert!(
        summary.contains("analyzed: 10000 revisions classified (one pass over 10000 stored revisions)"),
        "each revision read once: {summary}"
    );
    let c = classes(&db, "/registry/configmaps/ns/c7");
    assert_eq!(c.len(), 100);
    assert!(
        c[1..].iter().all(|x| x.0 == "spec" && x.2 == ["data.round"]),
        "{:?}",
        &c[..3]
    );
    // A later run with nothing new classifies nothing and reads nothing.
    let again = snapshot_summary(&etcd, &db);
    assert!(
        again.contains("analyzed: 0 revisions classified (one pass over 0 stored revisions)"),
        "{again}"
    );
}

#[test]
fn configured_sensitive_paths_are_keyed_and_never_stored() {
    let etcd = TestEtcd::start();
    let (_dir, db) = temp_db();
    let key = "/registry/example.com/tokens/shop/t";
    let token = |value: &str| {
        json_value(
            &j!({"apiVersion": "example.com/v1", "kind": "Token", "metadata": {"name": "t", "namespace": "shop", "uid": "u-t"},
                        "spec": {"token": value, "owner": "team-a"}}),
        )
    };
    etcd.put(key, &token("tok-AAAA-1111"));
    etcd.put(key, &token("tok-BBBB-2222"));
    ok(snapshot(&etcd, &db, &["--sensitive-path", "spec.token"]));
    let diff = json(inspector(&db, &["history", key, "--diff", "-o", "json"]));
    assert_eq!(diff[1]["change_class"], "spec");
    assert_eq!(
        diff[1]["diff"],
        j!([{"path": "spec.token", "old": "<redacted>", "new": "<redacted>", "managers": []}])
    );
    assert_eq!(
        assert_secrets_nowhere(&db, &["tok-AAAA-1111", "tok-BBBB-2222"]),
        2,
        "both revisions kept as keyed hashes, neither token anywhere"
    );
    let err = stderr(&snapshot(&etcd, &db, &["--field-depth", "3"]));
    assert!(
        err.contains("takes field hashes to depth 2"),
        "the depth is fixed by the first run: {err}"
    );
}
