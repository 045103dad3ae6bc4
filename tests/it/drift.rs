//! Drift across revisions and runs: flapping fields with their managers,
//! generation mismatches, and `diff` between two runs.

use crate::util::etcd::TestEtcd;
use crate::util::k8s::secret;
use crate::util::{assert_secrets_nowhere, findings, inspector, json, ok, snapshot, temp_db};
use etcd_inspector::decode::encode::encode_protobuf;
use serde_json::{json as j, Value};

/// A Deployment as the apiserver stores it after `manager` set `replicas`
/// at `time` (its managedFields entry covering spec.replicas).
fn deployment(replicas: i64, generation: i64, observed: i64, entries: Value) -> Vec<u8> {
    encode_protobuf(&j!({"apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "shop", "uid": "u-web", "generation": generation, "managedFields": entries},
        "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": "web"}},
                 "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "web", "image": "web:1"}]}}},
        "status": {"observedGeneration": observed}}))
    .unwrap()
}

fn entry(manager: &str, time: &str) -> Value {
    j!({"manager": manager, "operation": "Update", "apiVersion": "apps/v1", "time": time, "fieldsType": "FieldsV1",
        "fieldsV1": {"f:spec": {"f:replicas": {}}}})
}

#[test]
fn two_managers_fighting_over_replicas_is_flapping_and_a_scale_up_is_not() {
    let etcd = TestEtcd::start();
    let (_dir, db) = temp_db();
    let key = "/registry/deployments/shop/web";
    let mut times = (
        String::from("2026-11-29T08:00:00Z"),
        String::from("2026-11-29T08:00:00Z"),
    );
    for (i, replicas) in [3, 5, 3, 5, 3, 5, 3].into_iter().enumerate() {
        let generation = i as i64 + 1;
        let t = format!("2026-11-29T08:{:02}:00Z", i + 1);
        if replicas == 3 {
            times.0 = t;
        } else {
            times.1 = t;
        }
        let entries = j!([
            entry("kubectl-client-side-apply", &times.0),
            entry("hpa-controller", &times.1)
        ]);
        etcd.put(key, &deployment(replicas, generation, generation, entries));
    }
    let steady = "/registry/deployments/shop/steady";
    for (i, replicas) in [1, 2, 3].into_iter().enumerate() {
        let obj = j!({"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "steady", "namespace": "shop", "uid": "u-steady", "generation": i + 1},
            "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": "s"}},
                     "template": {"metadata": {"labels": {"app": "s"}}, "spec": {"containers": [{"name": "s", "image": "s:1"}]}}}});
        etcd.put(steady, &encode_protobuf(&obj).unwrap());
    }
    ok(snapshot(&etcd, &db, &[]));
    let f = findings(&db, "flapping");
    assert_eq!(f.len(), 1, "{f:#?}");
    assert_eq!(f[0]["keys"][0], key);
    let summary = f[0]["summary"].as_str().unwrap();
    assert!(
        summary.starts_with("spec.replicas of Deployment shop/web flipped 3→5→3→5→3→5→3"),
        "{summary}"
    );
    assert!(
        summary.contains("written by hpa-controller and by kubectl-client-side-apply"),
        "{summary}"
    );
    assert_eq!(f[0]["severity"], "medium");
    assert!(
        findings(&db, "generation-mismatch").is_empty(),
        "every spec change bumped the generation"
    );
    let diff = json(inspector(&db, &["history", key, "--diff", "-o", "json"]));
    let replicas = diff[1]["diff"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["path"] == "spec.replicas")
        .unwrap()
        .clone();
    assert_eq!(
        replicas,
        j!({"path": "spec.replicas", "old": 3, "new": 5, "managers": ["hpa-controller"]})
    );
}

#[test]
fn generation_mismatches() {
    let etcd = TestEtcd::start();
    let (_dir, db) = temp_db();
    let none = j!([]);
    let bumped = "/registry/deployments/shop/bumped";
    let stale = "/registry/deployments/shop/web";
    etcd.put(bumped, &deployment(3, 1, 1, none.clone()));
    etcd.put(bumped, &deployment(4, 2, 1, none.clone()));
    etcd.put(stale, &deployment(3, 4, 4, none.clone()));
    let no_bump = etcd.put(stale, &deployment(6, 4, 4, none.clone()));
    let back = etcd.put(stale, &deployment(6, 4, 3, none.clone()));
    ok(snapshot(&etcd, &db, &[]));
    let f = findings(&db, "generation-mismatch");
    assert_eq!(f.len(), 1, "the bumped Deployment is fine: {f:#?}");
    assert_eq!(f[0]["keys"][0], stale);
    assert_eq!(f[0]["revisions"], j!([no_bump, back]));
    assert!(
        f[0]["summary"]
            .as_str()
            .unwrap()
            .contains("status.observedGeneration went 4 → 3"),
        "{}",
        f[0]["summary"]
    );
    let events = f[0]["details"]["events"].as_array().unwrap();
    assert_eq!(events[0]["kind"], "spec-without-generation");
    assert_eq!(f[0]["severity"], "high");
}

fn cm(name: &str, uid: &str, labels: Value) -> Vec<u8> {
    encode_protobuf(&j!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": "shop", "uid": uid, "labels": labels},
                         "data": {"k": "v"}}))
    .unwrap()
}

#[test]
fn diff_between_two_runs_reports_exactly_what_changed() {
    let etcd = TestEtcd::start();
    let (_dir, db) = temp_db();
    let k = |n: &str| format!("/registry/configmaps/shop/{n}");
    for n in ["keep", "gone", "again", "relabel"] {
        etcd.put(&k(n), &cm(n, &format!("u-{n}"), j!({"a": "1"})));
    }
    etcd.put(
        "/registry/secrets/shop/db",
        &secret("shop", "db", "u-s", "old-Password-1"),
    );
    ok(snapshot(&etcd, &db, &[]));
    etcd.put(&k("new"), &cm("new", "u-new", j!({"a": "1"})));
    etcd.delete(&k("gone"));
    etcd.delete(&k("again"));
    etcd.put(&k("again"), &cm("again", "u-again-2", j!({"a": "1"})));
    etcd.put(&k("relabel"), &cm("relabel", "u-relabel", j!({"a": "2"})));
    etcd.put(
        "/registry/secrets/shop/db",
        &secret("shop", "db", "u-s", "new-Password-2"),
    );
    ok(snapshot(&etcd, &db, &[]));

    let d = json(inspector(&db, &["diff", "1", "2", "-o", "json"]));
    let got: Vec<(String, String)> = d["objects"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| {
            (
                o["change"].as_str().unwrap().to_string(),
                o["key"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    assert_eq!(
        got,
        vec![
            ("recreated".to_string(), k("again")),
            ("removed".to_string(), k("gone")),
            ("added".to_string(), k("new")),
            ("changed".to_string(), k("relabel")),
            ("changed".to_string(), "/registry/secrets/shop/db".to_string()),
        ]
    );
    let objects = d["objects"].as_array().unwrap();
    assert_eq!(
        (objects[0]["uid_a"].as_str(), objects[0]["uid_b"].as_str()),
        (Some("u-again"), Some("u-again-2"))
    );
    assert_eq!(
        objects[3]["fields"],
        j!([{"path": "metadata.labels", "old": {"a": "1"}, "new": {"a": "2"}, "managers": []}])
    );
    assert_eq!(
        objects[4]["fields"],
        j!([{"path": "data.password", "old": "<redacted>", "new": "<redacted>", "managers": []}])
    );
    assert_eq!(
        d["summary"]["configmaps"],
        j!({"added": 1, "removed": 1, "recreated": 1, "changed": 1, "not_comparable": 0})
    );
    assert_eq!(
        d["summary"]["secrets"],
        j!({"added": 0, "removed": 0, "recreated": 0, "changed": 1, "not_comparable": 0})
    );

    let only_secrets = json(inspector(
        &db,
        &["diff", "1", "2", "-o", "json", "--resource", "secrets"],
    ));
    assert_eq!(only_secrets["objects"].as_array().unwrap().len(), 1);
    let table = String::from_utf8_lossy(&ok(inspector(&db, &["diff", "1", "2"])).stdout).into_owned();
    assert!(
        table.contains("recreated ConfigMap shop/again: uid u-again → u-again-2"),
        "{table}"
    );
    assert!(
        !table.contains("Password"),
        "no secret value in the output: {table}"
    );
    assert_eq!(
        assert_secrets_nowhere(&db, &["old-Password-1", "new-Password-2"]),
        2,
        "the Secret's two revisions are keyed hashes, neither password anywhere"
    );
}

#[test]
fn flapping_across_a_compaction_gap_says_coverage_was_partial() {
    let etcd = TestEtcd::start();
    let (_dir, db) = temp_db();
    let key = "/registry/deployments/shop/web";
    let mut generation = 1;
    let mut put = |replicas: i64| {
        let r = etcd.put(key, &deployment(replicas, generation, generation, j!([])));
        generation += 1;
        r
    };
    put(3);
    put(5);
    put(3);
    ok(snapshot(&etcd, &db, &[]));
    put(5);
    put(3);
    let compact_at = put(5);
    put(3);
    etcd.compact(compact_at);
    ok(snapshot(&etcd, &db, &[]));
    let f = findings(&db, "flapping");
    assert_eq!(f.len(), 1);
    let summary = f[0]["summary"].as_str().unwrap();
    assert!(summary.contains("coverage partial: revisions"), "{summary}");
    assert_eq!(f[0]["details"]["coverage"], "partial");
}
