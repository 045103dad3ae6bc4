//! The lifecycle detectors against a real etcd: stuck deletions (a
//! Namespace stuck on its contents among them), dangling and recreated
//! owners, ownership cycles, fields a CRD would prune, and flapping that
//! means a fight; each with its negatives, on protobuf and JSON objects.

use crate::util::etcd::TestEtcd;
use crate::util::{findings, inspector, json, ok, snapshot, temp_db};
use etcd_inspector::decode::encode::encode_protobuf;
use serde_json::{json as j, Value};
use std::path::Path;
use std::process::Output;

/// `minutes` ago, as Kubernetes writes times.
fn ago(minutes: i64) -> String {
    let t = jiff::Timestamp::now() - jiff::SignedDuration::from_mins(minutes);
    t.strftime("%Y-%m-%dT%H:%M:%SZ").to_string()
}

fn meta(ns: Option<&str>, name: &str, uid: &str, created: &str) -> Value {
    let mut m = j!({"name": name, "uid": uid, "creationTimestamp": created,
        "managedFields": [{"manager": "kubectl", "operation": "Update", "apiVersion": "v1", "time": created,
                           "fieldsType": "FieldsV1", "fieldsV1": {"f:data": {}}}]});
    if let Some(ns) = ns {
        m["namespace"] = j!(ns);
    }
    m
}

fn config_map(ns: &str, name: &str, uid: &str, created: &str, extra: Value) -> Vec<u8> {
    let mut m = meta(Some(ns), name, uid, created);
    if let (Value::Object(m), Value::Object(extra)) = (&mut m, extra) {
        m.extend(extra);
    }
    encode_protobuf(&j!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": m, "data": {"k": "v"}}))
        .unwrap()
}

fn owner(api: &str, kind: &str, name: &str, uid: &str) -> Value {
    j!({"apiVersion": api, "kind": kind, "name": name, "uid": uid})
}

fn keys_of(found: &[Value]) -> Vec<String> {
    let mut keys: Vec<String> = found
        .iter()
        .flat_map(|f| f["keys"].as_array().unwrap().clone())
        .map(|k| k.as_str().unwrap().to_string())
        .collect();
    keys.sort();
    keys
}

fn summary_of<'a>(found: &'a [Value], key: &str) -> &'a str {
    found
        .iter()
        .find(|f| f["keys"].as_array().unwrap().iter().any(|k| k == key))
        .unwrap_or_else(|| panic!("no finding for {key}: {found:#?}"))["summary"]
        .as_str()
        .unwrap()
}

#[test]
fn stuck_deletions_dangling_owners_and_cycles() {
    let mut etcd = TestEtcd::start();
    let (dir, db) = temp_db();
    let cm = |name: &str| format!("/registry/configmaps/shop/{name}");
    // Written oldest first, as a cluster writes them: creation times grow
    // with revisions, which is what the detectors' clock relies on.
    etcd.put(
        "/registry/minions/n1",
        &encode_protobuf(
            &j!({"apiVersion": "v1", "kind": "Node", "metadata": meta(None, "n1", "node-uid", &ago(300))}),
        )
        .unwrap(),
    );
    etcd.put(
        "/registry/replicasets/shop/web",
        &encode_protobuf(&j!({"apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": meta(Some("shop"), "web", "rs-web", &ago(290)),
            "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "web"}}}}))
        .unwrap(),
    );
    // The owner of `dependent` is deleted and created again with a new UID.
    let owner_key = cm("owner");
    etcd.put(
        &owner_key,
        &config_map("shop", "owner", "owner-old", &ago(280), j!({})),
    );
    etcd.put(
        &cm("dependent"),
        &config_map(
            "shop",
            "dependent",
            "dep",
            &ago(270),
            j!({"ownerReferences": [owner("v1", "ConfigMap", "owner", "owner-old")]}),
        ),
    );
    let healthy_pod = |name: &str, created: &str| {
        encode_protobuf(&j!({"apiVersion": "v1", "kind": "Pod", "metadata": {
            "name": name, "namespace": "shop", "uid": format!("uid-{name}"), "creationTimestamp": created,
            "ownerReferences": [owner("apps/v1", "ReplicaSet", "web", "rs-web"), owner("v1", "Node", "n1", "node-uid")]},
            "spec": {"containers": [{"name": "app", "image": "web:1"}]}}))
        .unwrap()
    };
    etcd.put("/registry/pods/shop/healthy", &healthy_pod("healthy", &ago(260)));
    // An owner that never was: a ReplicaSet nobody stored.
    etcd.put(
        "/registry/pods/shop/orphan",
        &encode_protobuf(&j!({"apiVersion": "v1", "kind": "Pod", "metadata": {
            "name": "orphan", "namespace": "shop", "uid": "uid-orphan", "creationTimestamp": ago(250),
            "ownerReferences": [owner("apps/v1", "ReplicaSet", "gone", "rs-gone")]},
            "spec": {"containers": [{"name": "app", "image": "web:1"}]}}))
        .unwrap(),
    );
    // Cycles of two and three, and one object hanging off a cycle.
    let uid = |name: &str| format!("uid-{name}");
    for (name, owned_by) in [
        ("a", "b"),
        ("b", "a"),
        ("x", "y"),
        ("y", "z"),
        ("z", "x"),
        ("tail", "x"),
    ] {
        etcd.put(
            &cm(name),
            &config_map(
                "shop",
                name,
                &uid(name),
                &ago(240),
                j!({"ownerReferences": [owner("v1", "ConfigMap", owned_by, &uid(owned_by))]}),
            ),
        );
    }
    etcd.delete(&owner_key);
    etcd.put(
        &owner_key,
        &config_map("shop", "owner", "owner-new", &ago(200), j!({})),
    );
    // Deletions: old with a finalizer (who added it is in managedFields),
    // young, and a Namespace stuck on what is inside it.
    let finalized = |name: &str, created: &str, deleting: &str| {
        let mut m = meta(Some("shop"), name, &uid(name), created);
        m["deletionTimestamp"] = j!(deleting);
        m["finalizers"] = j!(["example.com/cleanup"]);
        m["managedFields"] = j!([{"manager": "cleanup-operator", "operation": "Update", "apiVersion": "v1", "time": created,
            "fieldsType": "FieldsV1", "fieldsV1": {"f:metadata": {"f:finalizers": {".": {}, "v:\"example.com/cleanup\"": {}}}}}]);
        encode_protobuf(&j!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": m})).unwrap()
    };
    etcd.put(&cm("stuck"), &finalized("stuck", &ago(180), &ago(120)));
    let doomed = j!({"apiVersion": "v1", "kind": "Namespace", "metadata": {
            "name": "doomed", "uid": "ns-doomed", "creationTimestamp": ago(170), "deletionTimestamp": ago(60)},
        "spec": {"finalizers": ["kubernetes"]}, "status": {"phase": "Terminating"}});
    etcd.put("/registry/namespaces/doomed", &encode_protobuf(&doomed).unwrap());
    for name in ["left-1", "left-2"] {
        etcd.put(
            &format!("/registry/configmaps/doomed/{name}"),
            &config_map("doomed", name, &uid(name), &ago(160), j!({})),
        );
    }
    // A custom resource, stored as JSON, stuck too.
    let widget = j!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {
        "name": "w", "namespace": "shop", "uid": "uid-w", "creationTimestamp": ago(150),
        "deletionTimestamp": ago(100), "finalizers": ["example.com/wait"]}, "spec": {"size": 1}});
    etcd.put(
        "/registry/example.com/widgets/shop/w",
        widget.to_string().as_bytes(),
    );
    etcd.put(&cm("young"), &finalized("young", &ago(5), &ago(2)));
    // A dangling owner that is young: the garbage collector may still act.
    etcd.put(
        &cm("just-orphaned"),
        &config_map(
            "shop",
            "just-orphaned",
            "uid-jo",
            &ago(1),
            j!({"ownerReferences": [owner("v1", "ConfigMap", "nothing", "uid-nothing")]}),
        ),
    );

    let metrics = dir.path().join("metrics.prom");
    ok(snapshot(
        &etcd,
        &db,
        &["--metrics-file", metrics.to_str().unwrap()],
    ));

    let stuck = findings(&db, "stuck-deletion");
    let mut want = vec![
        cm("stuck"),
        "/registry/example.com/widgets/shop/w".to_string(),
        "/registry/namespaces/doomed".to_string(),
    ];
    want.sort();
    assert_eq!(keys_of(&stuck), want, "{stuck:#?}");
    let s = summary_of(&stuck, &cm("stuck"));
    assert!(
        s.contains("held by finalizer example.com/cleanup (added by cleanup-operator)"),
        "{s}"
    );
    assert!(s.contains("deleting for 2h"), "{s}");
    let ns = summary_of(&stuck, "/registry/namespaces/doomed");
    assert!(
        ns.contains("held by finalizer kubernetes") && ns.contains("still inside: 2 configmaps"),
        "{ns}"
    );

    let dangling = findings(&db, "dangling-owner");
    assert_eq!(
        keys_of(&dangling),
        [cm("dependent"), "/registry/pods/shop/orphan".to_string()],
        "{dangling:#?}"
    );
    let d = summary_of(&dangling, &cm("dependent"));
    assert!(
        d.contains("uid owner-old") && d.contains("recreated with uid owner-new"),
        "{d}"
    );
    let orphan = dangling
        .iter()
        .find(|f| f["keys"][0] == "/registry/pods/shop/orphan")
        .unwrap();
    assert_eq!(orphan["details"]["owners"][0]["state"], "missing");

    let cycles = findings(&db, "owner-cycle");
    let mut members: Vec<usize> = cycles
        .iter()
        .map(|f| f["keys"].as_array().unwrap().len())
        .collect();
    members.sort();
    assert_eq!(members, [2, 3], "{cycles:#?}");
    assert!(!keys_of(&cycles).contains(&cm("tail")));

    // Every output shows them: the metrics file, and the report's summary
    // lines in each format.
    let prom = std::fs::read_to_string(&metrics).unwrap();
    for detector in ["stuck-deletion", "dangling-owner", "owner-cycle"] {
        assert!(
            prom.contains(&format!("detector=\"{detector}\"")),
            "{detector}: {prom}"
        );
    }
    let text = String::from_utf8(ok(inspector(&db, &["report"])).stdout).unwrap();
    assert!(
        text.contains("stuck deletions: 3: ConfigMap shop/stuck, Namespace doomed, Widget shop/w"),
        "{text}"
    );
    assert!(text.contains("owner problems: 4: "), "{text}");
    let md = String::from_utf8(ok(inspector(&db, &["report", "--format", "md"])).stdout).unwrap();
    assert!(md.contains("| stuck deletions | 3 |"), "{md}");
    let report = json(inspector(&db, &["report", "--format", "json"]));
    let lines = report["summary"]["lifecycle"].as_array().unwrap();
    assert_eq!(lines[1]["topic"], "owner problems");
    assert_eq!(lines[1]["findings"], 4);
    let html = String::from_utf8(ok(inspector(&db, &["report", "--format", "html"])).stdout).unwrap();
    assert!(
        html.contains("\"lifecycle\""),
        "the HTML carries the lifecycle lines"
    );

    // Analyzing again finds the same, with the same ids.
    let before = json(inspector(&db, &["findings", "-o", "json"]));
    ok(inspector(&db, &["analyze"]));
    assert_eq!(json(inspector(&db, &["findings", "-o", "json"])), before);
    // A data file has no clock: its newest stored time stands in for now
    // (here the minute-old object), and finds the same.
    etcd.stop();
    let (_file_dir, offline) = temp_db();
    ok(inspector(
        &offline,
        &["snapshot", "--file", etcd.db_file().to_str().unwrap()],
    ));
    assert_eq!(keys_of(&findings(&offline, "stuck-deletion")), keys_of(&stuck));
    assert_eq!(keys_of(&findings(&offline, "dangling-owner")), keys_of(&dangling));

    // A longer --stuck-after keeps the 2 h deletion, drops the younger ones.
    ok(inspector(&db, &["analyze", "--stuck-after", "110m"]));
    assert_eq!(keys_of(&findings(&db, "stuck-deletion")), [cm("stuck")]);
}

/// A CRD as the apiextensions server stores it (JSON), in the v1 form.
fn crd_v1(versions: Value) -> Vec<u8> {
    j!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com", "uid": "crd-1"},
        "spec": {"group": "example.com", "scope": "Namespaced",
                 "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList"},
                 "versions": versions}})
    .to_string()
    .into_bytes()
}

fn widget(name: &str, version: &str, spec: Value) -> Vec<u8> {
    j!({"apiVersion": format!("example.com/{version}"), "kind": "Widget",
        "metadata": {"name": name, "namespace": "shop", "uid": format!("uid-{name}")}, "spec": spec})
    .to_string()
    .into_bytes()
}

#[test]
fn fields_a_crd_would_prune() {
    let etcd = TestEtcd::start();
    let (_dir, db) = temp_db();
    let spec_schema = j!({"type": "object", "properties": {
        "size": {"type": "integer"},
        "ports": {"type": "array", "items": {"type": "object", "properties": {"port": {"type": "integer"}, "protocol": {"type": "string"}}}},
        "labels": {"type": "object", "additionalProperties": {"type": "object", "properties": {"team": {"type": "string"}}}},
        "extra": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}});
    let schema = |spec: &Value| j!({"openAPIV3Schema": {"type": "object", "properties": {"spec": spec}}});
    let v2_spec =
        j!({"type": "object", "properties": {"size": {"type": "integer"}, "colour": {"type": "string"}}});
    etcd.put(
        "/registry/apiextensions.k8s.io/customresourcedefinitions/widgets.example.com",
        &crd_v1(j!([
            {"name": "v1", "served": true, "storage": false, "schema": schema(&spec_schema)},
            {"name": "v2", "served": true, "storage": true, "schema": schema(&v2_spec)}
        ])),
    );
    let key = |name: &str| format!("/registry/example.com/widgets/shop/{name}");
    etcd.put(
        &key("typo"),
        &widget(
            "typo",
            "v1",
            j!({"size": 1, "colour": "blue", "ports": [{"port": 80, "protocl": "TCP"}],
                                   "labels": {"a": {"team": "x", "owner": "y"}}}),
        ),
    );
    etcd.put(
        &key("fine"),
        &widget(
            "fine",
            "v1",
            j!({"size": 1, "ports": [{"port": 80, "protocol": "TCP"}], "labels": {"a": {"team": "x"}},
                                   "extra": {"anything": {"goes": true}}}),
        ),
    );
    // Stored at v2, where colour is declared.
    etcd.put(
        &key("newer"),
        &widget("newer", "v2", j!({"size": 1, "colour": "red"})),
    );
    // A field that a later write dropped.
    etcd.put(
        &key("dropped"),
        &widget("dropped", "v1", j!({"size": 1, "shape": "round"})),
    );
    let dropped_at = etcd.put(&key("dropped"), &widget("dropped", "v1", j!({"size": 2})));
    // A v1beta1-form CRD: a top-level validation, preserveUnknownFields false.
    etcd.put(
        "/registry/apiextensions.k8s.io/customresourcedefinitions/gadgets.example.org",
        j!({"apiVersion": "apiextensions.k8s.io/v1beta1", "kind": "CustomResourceDefinition",
            "metadata": {"name": "gadgets.example.org", "uid": "crd-2"},
            "spec": {"group": "example.org", "version": "v1beta1", "scope": "Namespaced", "preserveUnknownFields": false,
                     "names": {"plural": "gadgets", "kind": "Gadget"},
                     "versions": [{"name": "v1beta1", "served": true, "storage": true}],
                     "validation": {"openAPIV3Schema": {"type": "object", "properties": {"spec": {"type": "object", "properties": {"on": {"type": "boolean"}}}}}}}})
        .to_string()
        .as_bytes(),
    );
    etcd.put(
        "/registry/example.org/gadgets/shop/g",
        j!({"apiVersion": "example.org/v1beta1", "kind": "Gadget", "metadata": {"name": "g", "namespace": "shop", "uid": "uid-g"},
            "spec": {"on": true, "volume": 11}})
        .to_string()
        .as_bytes(),
    );

    ok(snapshot(&etcd, &db, &[]));
    let found = findings(&db, "prunable-fields");
    let typo = summary_of(&found, &key("typo"));
    for path in ["spec.colour", "spec.ports[0].protocl", "spec.labels.a.owner"] {
        assert!(typo.contains(path), "{path}: {typo}");
    }
    assert!(typo.contains("drops them"), "{typo}");
    let typo_finding = found
        .iter()
        .find(|f| f["keys"][0] == key("typo").as_str())
        .unwrap();
    assert_eq!(typo_finding["severity"], "medium");
    assert!(summary_of(&found, "/registry/example.org/gadgets/shop/g").contains("spec.volume"));
    let dropped = found
        .iter()
        .find(|f| f["keys"][0] == key("dropped").as_str())
        .expect("the drop is reported");
    assert_eq!(dropped["severity"], "low");
    assert!(
        dropped["summary"]
            .as_str()
            .unwrap()
            .contains(&format!("spec.shape was dropped at revision {dropped_at}")),
        "{dropped}"
    );
    for quiet in ["fine", "newer"] {
        assert!(
            !found.iter().any(|f| f["keys"][0] == key(quiet).as_str()),
            "{quiet}: {found:#?}"
        );
    }
}

/// A Deployment whose `status.replicas` (or, with `spec`, `spec.replicas`)
/// is `n`, written by `manager`.
fn deployment(n: i64, manager: &str, field: &str) -> Vec<u8> {
    let (spec, status) = match field {
        "spec" => (n, 3),
        _ => (3, n),
    };
    let owned = if field == "spec" {
        j!({"f:spec": {"f:replicas": {}}})
    } else {
        j!({"f:status": {"f:replicas": {}}})
    };
    encode_protobuf(&j!({"apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "shop", "uid": "uid-web", "generation": 1,
            "managedFields": [{"manager": manager, "operation": "Update", "apiVersion": "apps/v1",
                               "time": format!("2026-12-01T10:00:{n:02}Z"), "subresource": if field == "spec" { "" } else { "status" },
                               "fieldsType": "FieldsV1", "fieldsV1": owned}]},
        "spec": {"replicas": spec, "selector": {"matchLabels": {"app": "web"}}},
        "status": {"replicas": status, "observedGeneration": 1}}))
    .unwrap()
}

#[test]
fn flapping_is_a_fight_not_a_rollout() {
    let etcd = TestEtcd::start();
    let (_dir, db) = temp_db();
    let key = "/registry/deployments/shop/web";
    // A rollout: one controller's status counter goes 3 → 4 → 3 → 4 → 3.
    for n in [3, 4, 3, 4, 3] {
        etcd.put(key, &deployment(n, "kube-controller-manager", "status"));
    }
    ok(snapshot(&etcd, &db, &[]));
    assert!(
        findings(&db, "flapping").is_empty(),
        "{:#?}",
        findings(&db, "flapping")
    );
    // Two managers alternating on the same status field: a fight.
    for (n, manager) in [
        (4, "old-operator"),
        (3, "kube-controller-manager"),
        (4, "old-operator"),
        (3, "kube-controller-manager"),
    ] {
        etcd.put(key, &deployment(n, manager, "status"));
    }
    ok(snapshot(&etcd, &db, &[]));
    let fights = findings(&db, "flapping");
    assert_eq!(fights.len(), 1, "{fights:#?}");
    let s = fights[0]["summary"].as_str().unwrap();
    assert!(
        s.starts_with("status.replicas") && s.contains("old-operator"),
        "{s}"
    );
}

/// What a command printed on standard output.
fn stdout(out: Output) -> String {
    String::from_utf8(ok(out).stdout).unwrap()
}

/// A stored revision's `(mod_revision, deleted, deleted_after,
/// last_seen_run, run_id)`.
type LeftRow = (i64, bool, Option<i64>, Option<i64>, i64);

/// Each [`LeftRow`] of `key`'s history.
fn left_rows(db: &Path, key: &str) -> Vec<LeftRow> {
    crate::util::history(db, key)
        .iter()
        .map(|h| {
            (
                h["mod_revision"].as_i64().unwrap(),
                h["deleted"].as_bool().unwrap(),
                h["deleted_after"].as_i64(),
                h["last_seen_run"].as_i64(),
                h["run_id"].as_i64().unwrap(),
            )
        })
        .collect()
}

#[test]
fn a_delete_compaction_hid_is_recorded_between_the_runs_that_bound_it() {
    hidden_deletes(&|etcd, db, _| snapshot(etcd, db, &[]));
}

#[test]
fn a_delete_compaction_hid_from_a_data_file_is_recorded_too() {
    // The second run reads a copy of the member's db file: it holds what
    // run 1 stored from before its own history too, which must not pass
    // for deleted.
    hidden_deletes(&|etcd, db, dir| {
        std::thread::sleep(std::time::Duration::from_millis(1500)); // etcd commits its backend batch
        let copy = dir.join("etcd.db");
        std::fs::copy(etcd.db_file(), &copy).unwrap();
        inspector(db, &["snapshot", "--file", copy.to_str().unwrap()])
    });
}

/// Run 1 stores three ConfigMaps and one untouched throughout; one is
/// deleted, one deleted and recreated, and the revisions compacted before
/// `second` runs (given the database and a folder for files).
fn hidden_deletes(second: &dyn Fn(&TestEtcd, &Path, &Path) -> Output) {
    let etcd = TestEtcd::start();
    let (dir, db) = temp_db();
    let now = ago(1);
    let (gone, again, kept) = (
        "/registry/configmaps/shop/web.config",
        "/registry/configmaps/shop/recreated",
        "/registry/configmaps/shop/kept",
    );
    // Stored as JSON, then rewritten as protobuf: an encoding-only finding
    // puts the key on the report's timelines.
    let as_json = j!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta(Some("shop"), "web.config", "u-gone", &now),
                      "data": {"k": "v"}});
    etcd.put(gone, &serde_json::to_vec(&as_json).unwrap());
    let stored_at = etcd.put(gone, &config_map("shop", "web.config", "u-gone", &now, j!({})));
    etcd.put(again, &config_map("shop", "recreated", "u-old", &now, j!({})));
    etcd.put(kept, &config_map("shop", "kept", "u-kept", &now, j!({})));
    etcd.put(
        "/registry/configmaps/shop/still",
        &config_map("shop", "still", "u-still", &now, j!({})),
    );
    ok(snapshot(&etcd, &db, &[]));
    let seen_at = etcd.head();

    etcd.delete(gone);
    etcd.delete(again);
    let recreated_at = etcd.put(again, &config_map("shop", "recreated", "u-new", &now, j!({})));
    let labels = j!({"labels": {"app.kubernetes.io/name": "kept"}});
    let compacted_to = etcd.put(kept, &config_map("shop", "kept", "u-kept", &now, labels));
    etcd.compact(compacted_to);
    let out = second(&etcd, &db, dir.path());
    ok(out.clone());
    let said = crate::util::stderr(&out);
    assert!(
        said.contains("2 object(s) stored by earlier runs were deleted in revisions compaction removed"),
        "{said}"
    );

    // Gone: deleted after run 1's head, by the revision before run 2's history.
    assert_eq!(
        left_rows(&db, gone),
        [
            (stored_at - 1, false, None, None, 1),
            (stored_at, false, None, None, 1),
            (compacted_to - 1, true, Some(seen_at), Some(1), 2)
        ]
    );
    // Recreated in the gap: the old generation ended before the new began.
    assert_eq!(
        left_rows(&db, again)
            .into_iter()
            .map(|r| (r.0, r.1, r.2))
            .collect::<Vec<_>>(),
        [
            (stored_at + 1, false, None),
            (recreated_at - 1, true, Some(seen_at)),
            (recreated_at, false, None)
        ]
    );

    // Every command says so.
    let table = stdout(inspector(&db, &["history", "configmap/web.config", "-n", "shop"]));
    let said = format!("deleted between revisions {seen_at} and {} (the delete was compacted away unread: run 1 saw it at revision {seen_at}, run 2 found it gone)", compacted_to - 1);
    assert!(table.contains(&said), "{table}");
    let show = inspector(&db, &["show", "configmap/web.config", "-n", "shop"]);
    assert!(!show.status.success());
    assert!(
        crate::util::stderr(&show).contains(&said),
        "{}",
        crate::util::stderr(&show)
    );
    let before = stdout(inspector(
        &db,
        &[
            "show",
            "configmap/web.config",
            "-n",
            "shop",
            "--rev",
            &seen_at.to_string(),
        ],
    ));
    assert!(before.contains("name: web.config"), "{before}");
    let removed = stdout(inspector(&db, &["diff", "1", "2"]));
    assert!(
        removed.contains("web.config") && removed.contains(&said),
        "{removed}"
    );
    let diff = inspector(
        &db,
        &[
            "diff",
            "1",
            "2",
            "--object",
            "configmap/web.config",
            "-n",
            "shop",
            "--unified",
        ],
    );
    assert!(
        crate::util::stderr(&diff).contains(&said),
        "{}",
        crate::util::stderr(&diff)
    );
    let report = json(inspector(&db, &["report", "--format", "json"]));
    let noted: Vec<&str> = report["timelines"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["left"].as_object())
        .flat_map(|l| l.values().filter_map(Value::as_str))
        .collect();
    assert!(noted.iter().any(|n| n.contains(&said[..40])), "{noted:?}");

    // The live set holds it no longer.
    let stats = json(inspector(&db, &["stats", "-o", "json"]));
    let objects = stats["resources"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["resource"] == "configmaps")
        .map(|r| r["objects"].clone());
    assert_eq!(objects, Some(j!(3)), "{stats}");

    // A later run infers nothing again.
    let stored = left_rows(&db, gone);
    ok(snapshot(&etcd, &db, &[]));
    assert_eq!(left_rows(&db, gone), stored);
    drop(dir);
}
