//! The duplicate-create detectors (`recreated`, `excess-siblings`,
//! `duplicate-entries`) against a real etcd, each with its negative case.

use crate::util::etcd::TestEtcd;
use crate::util::{findings, inspector, json, ok, snapshot, temp_db};
use etcd_inspector::decode::encode::encode_protobuf;
use serde_json::{json as j, Value};

fn owned_pod(name: &str, uid: &str, owner: (&str, &str, &str), image: &str) -> Vec<u8> {
    let (kind, owner_name, owner_uid) = owner;
    encode_protobuf(&j!({"apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "generateName": format!("{owner_name}-"), "namespace": "ns", "uid": uid,
                     "creationTimestamp": "2026-11-29T08:00:00Z",
                     "ownerReferences": [{"apiVersion": "apps/v1", "kind": kind, "name": owner_name, "uid": owner_uid, "controller": true}],
                     "managedFields": [{"manager": "kube-controller-manager", "operation": "Update", "apiVersion": "v1", "time": "2026-11-29T08:00:00Z"}]},
        "spec": {"containers": [{"name": "main", "image": image}]}}))
    .unwrap()
}

fn replicaset(name: &str, uid: &str, replicas: i64) -> Vec<u8> {
    encode_protobuf(&j!({"apiVersion": "apps/v1", "kind": "ReplicaSet",
        "metadata": {"name": name, "namespace": "ns", "uid": uid},
        "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}}}}))
    .unwrap()
}

fn job(name: &str, uid: &str) -> Vec<u8> {
    encode_protobuf(&j!({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name, "namespace": "ns", "uid": uid},
        "spec": {"parallelism": 1, "template": {"spec": {"containers": [{"name": "main", "image": "job:1"}]}}}}))
    .unwrap()
}

fn for_key<'a>(findings: &'a [Value], key: &str) -> Vec<&'a Value> {
    findings.iter().filter(|f| f["keys"][0] == key).collect()
}

#[test]
fn recreated_pods_are_reported_and_updated_ones_are_not() {
    let etcd = TestEtcd::start();
    let (_dir, db) = temp_db();
    let key = "/registry/pods/ns/web-0";
    let owner = ("StatefulSet", "web", "u-sts");
    etcd.put(key, &owned_pod("web-0", "uid-old", owner, "web:1"));
    let deleted = etcd.delete(key);
    let recreated = etcd.put(key, &owned_pod("web-0", "uid-new", owner, "web:1"));
    let in_place = "/registry/pods/ns/stable";
    etcd.put(
        in_place,
        &owned_pod("stable", "uid-s", ("StatefulSet", "other", "u-o"), "web:1"),
    );
    etcd.put(
        in_place,
        &owned_pod("stable", "uid-s", ("StatefulSet", "other", "u-o"), "web:2"),
    );
    ok(snapshot(&etcd, &db, &[]));
    let f = findings(&db, "recreated");
    let ours = for_key(&f, key);
    assert_eq!(ours.len(), 1, "{f:#?}");
    let summary = ours[0]["summary"].as_str().unwrap();
    assert!(
        summary.contains("uid uid-old → uid-new") && summary.contains("same spec"),
        "{summary}"
    );
    assert_eq!(ours[0]["revisions"], j!([deleted, recreated]));
    assert_eq!(ours[0]["severity"], "medium");
    assert!(
        for_key(&f, in_place).is_empty(),
        "an update in place is not a recreate"
    );
}

#[test]
fn excess_siblings_against_desired_counts() {
    let etcd = TestEtcd::start();
    let (_dir, db) = temp_db();
    // A Job with parallelism 1 and two identical live pods: a retried create.
    etcd.put("/registry/jobs/ns/backup", &job("backup", "u-job"));
    etcd.put(
        "/registry/pods/ns/backup-x1",
        &owned_pod("backup-x1", "p1", ("Job", "backup", "u-job"), "job:1"),
    );
    let extra = etcd.put(
        "/registry/pods/ns/backup-x2",
        &owned_pod("backup-x2", "p2", ("Job", "backup", "u-job"), "job:1"),
    );
    // A healthy ReplicaSet at 3, then scaled to 2 with the delete a few revisions later.
    etcd.put("/registry/replicasets/ns/web", &replicaset("web", "u-rs", 3));
    for p in ["a", "b", "c"] {
        etcd.put(
            &format!("/registry/pods/ns/web-{p}"),
            &owned_pod(
                &format!("web-{p}"),
                &format!("w{p}"),
                ("ReplicaSet", "web", "u-rs"),
                "web:1",
            ),
        );
    }
    etcd.put("/registry/replicasets/ns/web", &replicaset("web", "u-rs", 2));
    etcd.put("/registry/configmaps/ns/unrelated", &encode_protobuf(&j!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "unrelated", "namespace": "ns"}})).unwrap());
    etcd.delete("/registry/pods/ns/web-c");
    // Another ReplicaSet at 3 with 3 live pods gets a fourth.
    etcd.put("/registry/replicasets/ns/api", &replicaset("api", "u-api", 3));
    for p in ["a", "b", "c"] {
        etcd.put(
            &format!("/registry/pods/ns/api-{p}"),
            &owned_pod(
                &format!("api-{p}"),
                &format!("a{p}"),
                ("ReplicaSet", "api", "u-api"),
                "api:1",
            ),
        );
    }
    let fourth = etcd.put(
        "/registry/pods/ns/api-d",
        &owned_pod("api-d", "ad", ("ReplicaSet", "api", "u-api"), "api:1"),
    );
    ok(snapshot(&etcd, &db, &[]));

    let f = findings(&db, "excess-siblings");
    assert_eq!(f.len(), 2, "{f:#?}");
    let job_finding = for_key(&f, "/registry/pods/ns/backup-x2");
    assert_eq!(job_finding.len(), 1);
    assert_eq!(job_finding[0]["revisions"], j!([extra]));
    assert!(
        job_finding[0]["summary"]
            .as_str()
            .unwrap()
            .contains("Job ns/backup already had 1 of 1 live (backup-x1)"),
        "{}",
        job_finding[0]["summary"]
    );
    assert_eq!(job_finding[0]["details"]["managers"], "kube-controller-manager");
    let rs_finding = for_key(&f, "/registry/pods/ns/api-d");
    assert_eq!(rs_finding.len(), 1);
    assert_eq!(rs_finding[0]["revisions"], j!([fourth]));
    assert!(rs_finding[0]["summary"].as_str().unwrap().contains(&format!(
        "created at revision {fourth} while ReplicaSet ns/api already had 3 of 3 live"
    )));
    assert!(
        f.iter()
            .all(|x| !x["keys"][0].as_str().unwrap().contains("/web-")),
        "a healthy ReplicaSet and scale-down lag are not excess"
    );
}

#[test]
fn duplicate_list_entries_with_their_first_revision() {
    let etcd = TestEtcd::start();
    let (_dir, db) = temp_db();
    let owner = j!({"apiVersion": "example.com/v1", "kind": "Platform", "name": "p", "uid": "u-p"});
    let dep = |refs: Value| {
        encode_protobuf(&j!({"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "web", "namespace": "ns", "uid": "u-d", "ownerReferences": refs},
            "spec": {"selector": {"matchLabels": {"app": "web"}}, "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "web", "image": "web:1"}]}}}}))
        .unwrap()
    };
    etcd.put("/registry/deployments/ns/web", &dep(j!([owner.clone()])));
    let doubled = etcd.put(
        "/registry/deployments/ns/web",
        &dep(j!([owner.clone(), owner.clone()])),
    );
    let rb = encode_protobuf(&j!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding", "metadata": {"name": "rb", "namespace": "ns", "uid": "u-rb"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "r"},
        "subjects": [{"kind": "User", "name": "alice"}, {"kind": "User", "name": "alice"}]}))
    .unwrap();
    let rb_rev = etcd.put("/registry/rolebindings/ns/rb", &rb);
    let cm = |finalizers: Value| {
        encode_protobuf(&j!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": "ns", "uid": "u-c", "finalizers": finalizers}})).unwrap()
    };
    etcd.put("/registry/configmaps/ns/c", &cm(j!(["example.com/cleanup"])));
    let fin_rev = etcd.put(
        "/registry/configmaps/ns/c",
        &cm(j!(["example.com/cleanup", "example.com/cleanup"])),
    );
    etcd.put("/registry/configmaps/ns/clean", &cm(j!(["a", "b"])));
    ok(snapshot(&etcd, &db, &[]));

    let f = findings(&db, "duplicate-entries");
    assert_eq!(f.len(), 3, "{f:#?}");
    let d = for_key(&f, "/registry/deployments/ns/web")[0];
    assert_eq!(d["revisions"], j!([doubled]));
    assert!(
        d["summary"]
            .as_str()
            .unwrap()
            .contains("metadata.ownerReferences: uid u-p ×2"),
        "{}",
        d["summary"]
    );
    assert!(
        d["summary"].as_str().unwrap().contains("grew 1@"),
        "how the list grew: {}",
        d["summary"]
    );
    assert_eq!(
        for_key(&f, "/registry/rolebindings/ns/rb")[0]["revisions"],
        j!([rb_rev])
    );
    assert_eq!(
        for_key(&f, "/registry/configmaps/ns/c")[0]["revisions"],
        j!([fin_rev])
    );
    assert!(for_key(&f, "/registry/configmaps/ns/clean").is_empty());

    // Findings are stable: analyzing again changes nothing.
    let before = json(inspector(&db, &["findings", "-o", "json"]));
    let out = ok(inspector(&db, &["analyze"]));
    let after = json(inspector(&db, &["findings", "-o", "json"]));
    assert_eq!(before, after);
    assert!(String::from_utf8_lossy(&out.stderr).contains("analyzed: 0 revisions classified"));
}
