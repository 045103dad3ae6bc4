//! `-o name` and `-o jsonpath=TEMPLATE` on the listing commands, as
//! kubectl prints them.

use crate::util::etcd::TestEtcd;
use crate::util::k8s::config_map;
use crate::util::*;
use etcd_inspector::decode::encode::encode_protobuf;
use serde_json::json as j;

/// Standard output of a command that succeeds.
fn stdout(db: &std::path::Path, args: &[&str]) -> String {
    String::from_utf8(ok(inspector(db, args)).stdout).unwrap()
}

fn pod(name: &str, uid: &str) -> Vec<u8> {
    encode_protobuf(&j!({"apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": "ns", "uid": uid, "generateName": "web-",
                     "creationTimestamp": "2026-11-29T08:00:00Z",
                     "ownerReferences": [{"apiVersion": "apps/v1", "kind": "StatefulSet", "name": "web", "uid": "u-sts", "controller": true}]},
        "spec": {"containers": [{"name": "main", "image": "web:1"}]}}))
    .unwrap()
}

#[test]
fn listings_print_names_and_jsonpath_templates() {
    let etcd = TestEtcd::start();
    let key = "/registry/configmaps/shop/web";
    let cm = |color: &str| config_map("shop", "web", "u1", &[("app.properties", color)]);
    etcd.put(key, &cm("color=blue"));
    // A recreated pod: one finding.
    etcd.put("/registry/pods/ns/web-0", &pod("web-0", "uid-old"));
    etcd.delete("/registry/pods/ns/web-0");
    etcd.put("/registry/pods/ns/web-0", &pod("web-0", "uid-new"));
    let (_dir, db) = temp_db();
    ok(snapshot(&etcd, &db, &[]));
    etcd.put(key, &cm("color=green"));
    ok(snapshot(&etcd, &db, &[]));

    assert_eq!(stdout(&db, &["runs", "-o", "name"]), "run/1\nrun/2\n");
    assert_eq!(
        stdout(&db, &["history", "cm/web", "-n", "shop", "-o", "name"]),
        "configmap/web\nconfigmap/web\n"
    );
    let findings = stdout(&db, &["findings", "--detector", "recreated", "-o", "name"]);
    assert_eq!(findings, "pod/web-0\n");
    let diff = stdout(&db, &["diff", "1", "2", "-o", "name"]);
    assert_eq!(diff, "configmap/web\n");

    // The template applies to the document `-o json` prints.
    assert_eq!(stdout(&db, &["runs", "-o", "jsonpath={[*].id}"]), "1 2");
    let each = r#"jsonpath={range [*]}{.id}{"\t"}{.status}{"\n"}{end}"#;
    assert_eq!(stdout(&db, &["runs", "-o", each]), "1\tcomplete\n2\tcomplete\n");
    // kubectl's quotes, left by a shell that did not take them.
    let quoted = "jsonpath='{[?(@.mod_revision>0)].version}'";
    assert_eq!(
        stdout(&db, &["history", "cm/web", "-n", "shop", "-o", quoted]),
        "1 2"
    );
    assert_eq!(
        stdout(&db, &["findings", "-o", "jsonpath={[*].keys[0]}"]),
        "/registry/pods/ns/web-0"
    );
    let changed = stdout(&db, &["diff", "1", "2", "-o", "jsonpath={.objects[*].change}"]);
    assert_eq!(changed, "changed");
    let resources = stdout(&db, &["stats", "-o", "jsonpath={.resources[*].resource}"]);
    assert!(resources.split(' ').any(|r| r == "configmaps"), "{resources}");

    // A bad template, or a name where there is none: a usage error.
    let bad = inspector(&db, &["runs", "-o", "jsonpath={[*].id"]);
    assert_exit(&bad, 2);
    let err = stderr(&bad);
    assert!(err.contains("{[*].id") && err.contains("unclosed {"), "{err}");
    let bad = inspector(&db, &["stats", "-o", "name"]);
    assert_exit(&bad, 2);
    let err = stderr(&bad);
    assert!(err.contains("stats") && err.contains("-o name"), "{err}");
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
}
