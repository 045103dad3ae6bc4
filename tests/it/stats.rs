//! `stats` against a real etcd with known counts: objects, revisions, bytes,
//! encodings, encryption, writes per class, the largest and busiest keys,
//! field managers and namespaces, in JSON and as tables.

use crate::util::etcd::TestEtcd;
use crate::util::*;
use etcd_inspector::decode::encode::encode_protobuf;
use serde_json::{json as j, Value};

fn cm(ns: &str, name: &str, data: &str, manager: &str, time: &str) -> Vec<u8> {
    encode_protobuf(&j!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": ns, "uid": format!("uid-{name}"),
            "managedFields": [{"manager": manager, "operation": "Update", "apiVersion": "v1", "time": time,
                               "fieldsType": "FieldsV1", "fieldsV1": {"f:data": {"f:k": {}}}}]},
        "data": {"k": data}}))
    .unwrap()
}

fn resource<'a>(stats: &'a Value, group: &str, name: &str) -> &'a Value {
    stats["resources"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["group"] == group && r["resource"] == name)
        .unwrap_or_else(|| panic!("no {name}.{group} in {stats:#}"))
}

#[test]
fn stats_counts_what_the_database_holds() {
    let etcd = TestEtcd::start();
    let (_dir, db) = temp_db();
    let mut sizes: std::collections::BTreeMap<String, Vec<usize>> = Default::default();
    let mut put = |key: &str, value: &[u8]| {
        etcd.put(key, value);
        sizes.entry(key.to_string()).or_default().push(value.len());
    };
    let key = |ns: &str, name: &str| format!("/registry/configmaps/{ns}/{name}");
    // `busy`: an operator bumps only its managedFields time, three times.
    put(
        &key("a", "busy"),
        &cm("a", "busy", "1", "kubectl", "2026-12-01T10:00:00Z"),
    );
    for minute in 1..=3 {
        put(
            &key("a", "busy"),
            &cm(
                "a",
                "busy",
                "1",
                "operator",
                &format!("2026-12-01T10:0{minute}:00Z"),
            ),
        );
    }
    // `big`: one large value.
    let big = cm("a", "big", &"x".repeat(50_000), "kubectl", "2026-12-01T10:00:00Z");
    put(&key("a", "big"), &big);
    // `same`: written twice byte for byte.
    let same = cm("b", "same", "s", "kubectl", "2026-12-01T10:00:00Z");
    put(&key("b", "same"), &same);
    put(&key("b", "same"), &same);
    // `gone`: created and deleted.
    put(
        &key("b", "gone"),
        &cm("b", "gone", "g", "kubectl", "2026-12-01T10:00:00Z"),
    );
    etcd.delete(&key("b", "gone"));
    // A custom resource in JSON and a Secret encrypted at rest.
    let widget = br#"{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w","namespace":"b","uid":"w1"},"spec":{"size":1}}"#;
    put("/registry/example.com/widgets/b/w", widget);
    put(
        "/registry/secrets/b/s",
        b"k8s:enc:aesgcm:v1:key1:0123456789abcdef0123456789abcdef",
    );
    ok(snapshot(&etcd, &db, &[]));

    let stats = json(inspector(&db, &["stats", "-o", "json"]));
    let cms = resource(&stats, "", "configmaps");
    let cm_bytes: usize = sizes
        .iter()
        .filter(|(k, _)| k.contains("/configmaps/"))
        .flat_map(|(_, v)| v)
        .sum();
    let live_bytes: usize = ["busy", "big", "same"]
        .iter()
        .map(|n| {
            *sizes[&key(if *n == "same" { "b" } else { "a" }, n)]
                .last()
                .unwrap()
        })
        .sum();
    assert_eq!(cms["objects"], 3, "{cms:#}");
    assert_eq!(cms["revisions"], 4 + 1 + 2 + 2, "8 values and a tombstone");
    assert_eq!(cms["bytes_all_revisions"], cm_bytes);
    assert_eq!(cms["bytes_live"], live_bytes);
    assert_eq!(cms["encodings"], j!({"protobuf": 8, "deleted": 1}));
    assert_eq!(cms["encryption"], j!({"identity": 8}));
    assert_eq!(cms["writes"]["rewrite"], 1);
    assert_eq!(cms["writes"]["metadata-only"], 3);
    assert_eq!(
        resource(&stats, "example.com", "widgets")["encodings"],
        j!({"json": 1})
    );
    let secrets = resource(&stats, "", "secrets");
    assert_eq!(secrets["encodings"], j!({"encrypted": 1}));
    assert_eq!(secrets["encryption"], j!({"aesgcm:key1": 1}));

    assert_eq!(stats["largest"][0]["key"], key("a", "big"));
    assert_eq!(stats["largest"][0]["bytes_all_revisions"], big.len());
    assert_eq!(stats["largest"][0]["latest_size"], big.len());
    assert_eq!(stats["busiest"][0]["key"], key("a", "busy"));
    assert_eq!(stats["busiest"][0]["revisions"], 4);
    let same_row = stats["busiest"]
        .as_array()
        .unwrap()
        .iter()
        .find(|b| b["key"] == key("b", "same"))
        .unwrap();
    assert_eq!(
        (
            same_row["revisions"].as_i64(),
            same_row["changed_nothing"].as_i64()
        ),
        (Some(2), Some(1))
    );

    // The operator's three writes changed only metadata, only a time.
    let operator = stats["managers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["manager"] == "operator")
        .expect("operator");
    assert_eq!(
        (
            &operator["resource"],
            &operator["writes"],
            &operator["metadata_only"],
            &operator["timestamps_only"]
        ),
        (&j!("configmaps"), &j!(3), &j!(3), &j!(3)),
        "{operator}"
    );
    let ns_a = stats["namespaces"]
        .as_array()
        .unwrap()
        .iter()
        .find(|n| n["namespace"] == "a")
        .unwrap();
    assert_eq!(
        (ns_a["objects"].as_i64(), ns_a["revisions"].as_i64()),
        (Some(2), Some(5))
    );

    // The report's summary gives the same numbers.
    let report = json(inspector(&db, &["report", "--format", "json"]));
    assert_eq!(report["summary"]["resources"], stats["resources"]);

    // Filters and --top.
    let only_b = json(inspector(
        &db,
        &["stats", "-o", "json", "--namespace", "b", "--top", "1"],
    ));
    assert_eq!(only_b["largest"].as_array().unwrap().len(), 1);
    assert!(only_b["namespaces"]
        .as_array()
        .unwrap()
        .iter()
        .all(|n| n["namespace"] == "b"));
    // The tables hold the same figures.
    let table = String::from_utf8(ok(inspector(&db, &["stats"])).stdout).unwrap();
    for needle in [
        "Resources",
        "configmaps",
        "protobuf 8",
        "aesgcm:key1 1",
        "Largest keys",
        "Busiest keys",
        "operator",
        "Namespaces",
    ] {
        assert!(table.contains(needle), "{needle}: {table}");
    }
    assert!(
        table.contains("48.9 KiB") || table.contains("49.0 KiB"),
        "{table}"
    );
}
