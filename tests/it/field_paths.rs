//! Field paths over the keys real objects hold: dotted ConfigMap keys,
//! dotted and slashed labels, keys with brackets, quotes and backslashes,
//! through attribution, flapping, diffs, sensitive paths and a database
//! written before paths had segments.

use crate::util::etcd::TestEtcd;
use crate::util::{
    assert_secrets_nowhere, findings, history, inspector, ok, snapshot, sqlite_only, stderr, temp_db,
    undo_typed_runs,
};
use etcd_inspector::decode::encode::encode_protobuf;
use serde_json::{json as j, Value};
use std::path::Path;

const KEY: &str = "/registry/configmaps/shop/web-config";

/// The ConfigMap after `manager` wrote `app.properties` at `time`, as the
/// apiserver stores it (protobuf, managedFields owning the dotted key).
fn config(value: &str, entries: Value) -> Vec<u8> {
    encode_protobuf(&j!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "web-config", "namespace": "shop", "uid": "u-cm",
                     "labels": {"app.kubernetes.io/name": "web"}, "managedFields": entries},
        "data": {"app.properties": value, "plain": "x"}}))
    .unwrap()
}

fn entry(manager: &str, time: &str) -> Value {
    j!({"manager": manager, "operation": "Update", "apiVersion": "v1", "time": time, "fieldsType": "FieldsV1",
        "fieldsV1": {"f:data": {"f:app.properties": {}}}})
}

/// Two managers writing `app.properties` in turn: `mode=alpha` by `deployer`,
/// `mode=bravo` by `tuner`, five times.
fn fight(etcd: &TestEtcd) {
    let mut times = (
        String::from("2026-11-29T08:00:00Z"),
        String::from("2026-11-29T08:00:00Z"),
    );
    for (i, value) in [
        "mode=alpha",
        "mode=bravo",
        "mode=alpha",
        "mode=bravo",
        "mode=alpha",
    ]
    .into_iter()
    .enumerate()
    {
        let t = format!("2026-11-29T08:{:02}:00Z", i + 1);
        match value {
            "mode=alpha" => times.0 = t,
            _ => times.1 = t,
        }
        etcd.put(
            KEY,
            &config(value, j!([entry("deployer", &times.0), entry("tuner", &times.1)])),
        );
    }
}

fn text(out: std::process::Output) -> String {
    String::from_utf8(ok(out).stdout).unwrap()
}

#[test]
fn a_dotted_configmap_key_shows_its_values_and_its_managers() {
    let etcd = TestEtcd::start();
    let (_dir, db) = temp_db();
    fight(&etcd);
    ok(snapshot(&etcd, &db, &[]));
    let rows = history(&db, KEY);
    assert_eq!(
        rows[1]["changed_paths"],
        j!([r"data.app\.properties", "metadata.managedFields"]),
        "{:#}",
        rows[1]
    );
    assert_eq!(
        rows[1]["changed_by"],
        j!({r"data.app\.properties": ["tuner"], "metadata.managedFields": ["tuner"]})
    );
    let diff: Value =
        serde_json::from_str(&text(inspector(&db, &["history", KEY, "--diff", "-o", "json"]))).unwrap();
    assert_eq!(
        diff[1]["diff"][0],
        j!({"path": r"data.app\.properties", "old": "mode=alpha", "new": "mode=bravo", "managers": ["tuner"]})
    );
    // Only the revisions that changed the dotted key, asked for in either form.
    for form in [r"data.app\.properties", r#"data["app.properties"]"#] {
        let only: Value = serde_json::from_str(&text(inspector(
            &db,
            &["history", KEY, "--field", form, "-o", "json"],
        )))
        .unwrap();
        let changed: Vec<&Value> = only
            .as_array()
            .unwrap()
            .iter()
            .map(|r| &r["changed_paths"])
            .collect();
        assert_eq!(changed, vec![&j!([r"data.app\.properties"]); 4], "{form}");
    }
    let err = stderr(&inspector(&db, &["history", KEY, "--field", "data.plain"]));
    assert!(err.contains("changed data.plain"), "{err}");
    let table = text(inspector(&db, &["history", KEY, "--diff"]));
    assert!(
        table.contains(r"data.app\.properties: mode=alpha → mode=bravo"),
        "{table}"
    );
    let flapping = findings(&db, "flapping");
    assert_eq!(flapping.len(), 1, "{flapping:#?}");
    let summary = flapping[0]["summary"].as_str().unwrap();
    assert!(summary.starts_with(r"data.app\.properties of ConfigMap shop/web-config flipped mode=alpha→mode=bravo→mode=alpha→mode=bravo→mode=alpha"), "{summary}");
    assert!(summary.contains("written by deployer and by tuner"), "{summary}");
    assert_eq!(flapping[0]["severity"], "medium");
}

#[test]
fn a_sensitive_dotted_key_is_keyed_in_either_form_and_never_shown() {
    let etcd = TestEtcd::start();
    fight(&etcd);
    for form in [r"data.app\.properties", r#"data["app.properties"]"#] {
        let (_dir, db) = temp_db();
        ok(snapshot(&etcd, &db, &["--sensitive-path", form]));
        let diff: Value =
            serde_json::from_str(&text(inspector(&db, &["history", KEY, "--diff", "-o", "json"]))).unwrap();
        assert_eq!(
            diff[1]["diff"][0],
            j!({"path": r"data.app\.properties", "old": "<redacted>", "new": "<redacted>", "managers": ["tuner"]}),
            "{form}"
        );
        assert!(
            assert_secrets_nowhere(&db, &["mode=alpha", "mode=bravo"]) > 0,
            "{form}"
        );
        // The same path in the other form is the same choice.
        ok(snapshot(
            &etcd,
            &db,
            &["--sensitive-path", r"{.data.app\.properties}"],
        ));
        let err = stderr(&snapshot(
            &etcd,
            &db,
            &["--sensitive-path", "data.app.properties"],
        ));
        assert!(err.contains(r"treats data.app\.properties as sensitive"), "{err}");
    }
    let (_dir, db) = temp_db();
    let err = stderr(&snapshot(&etcd, &db, &["--sensitive-path", "data..x"]));
    assert!(
        err.contains("invalid value 'data..x' for '--sensitive-path"),
        "{err}"
    );
    assert!(err.contains("an empty member name"), "{err}");
}

#[test]
fn label_keys_and_keys_with_brackets_quotes_and_backslashes_at_depth_three() {
    let etcd = TestEtcd::start();
    let (_dir, db) = temp_db();
    let key = "/registry/example.com/gizmos/shop/g1";
    let weird = r#"we[ir]d"key\x"#;
    let gizmo = |name: &str, value: i64| {
        let mut b = serde_json::to_vec(&j!({"apiVersion": "example.com/v1", "kind": "Gizmo",
            "metadata": {"name": "g1", "namespace": "shop", "uid": "u-g1", "labels": {"app.kubernetes.io/name": name}},
            "spec": {"map": {weird: value, "plain": 1}}}))
        .unwrap();
        b.push(b'\n');
        b
    };
    etcd.put(key, &gizmo("web", 1));
    etcd.put(key, &gizmo("api", 2));
    ok(snapshot(&etcd, &db, &["--field-depth", "3"]));
    let rows = history(&db, key);
    assert_eq!(
        rows[1]["changed_paths"],
        j!([
            r"metadata.labels.app\.kubernetes\.io/name",
            r#"spec.map.we\[ir\]d"key\\x"#
        ]),
        "{:#}",
        rows[1]
    );
    let diff: Value =
        serde_json::from_str(&text(inspector(&db, &["history", key, "--diff", "-o", "json"]))).unwrap();
    let changes: Vec<(String, Value, Value)> = diff[1]["diff"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c["path"].as_str().unwrap().to_string(),
                c["old"].clone(),
                c["new"].clone(),
            )
        })
        .collect();
    assert_eq!(
        changes,
        [
            (
                r"metadata.labels.app\.kubernetes\.io/name".to_string(),
                j!("web"),
                j!("api")
            ),
            (r#"spec.map.we\[ir\]d"key\\x"#.to_string(), j!(1), j!(2)),
        ]
    );
}

/// Rewrites a database's stored paths as releases before segmented paths
/// wrote them (segments joined by `.`, containers as `[name]`), at schema 13
/// (before the hash key's id was recorded, too).
fn as_written_before_segments(db: &Path) {
    undo_typed_runs(db);
    let conn = rusqlite::Connection::open(db).unwrap();
    conn.execute_batch(
        r#"UPDATE field_paths SET path = replace(path, '\.', '.');
           UPDATE revisions SET changed_paths = replace(changed_paths, '\\.', '.'),
                                changed_by = replace(changed_by, '\\.', '.'),
                                duplicates = replace(duplicates, '[name=', '[');
           UPDATE settings SET value = CAST(replace(CAST(value AS TEXT), '\\.', '.') AS BLOB) WHERE name = 'sensitive_paths';
           ALTER TABLE runs DROP COLUMN hash_key;
           ALTER TABLE revisions DROP COLUMN hash_key;
           DROP INDEX findings_by_severity;
           DROP INDEX findings_by_cluster;
           DROP INDEX semantic_values_by_base;
           DROP TABLE run_members;
           DROP TABLE revision_writers;
           DROP TABLE audit_requests;
           DROP INDEX keys_by_object;
           DROP TABLE clock_marks;
           DROP TABLE clock_envelope;
           ALTER TABLE revisions DROP COLUMN event_time;
           DROP INDEX clusters_by_name;
           DROP INDEX findings_by_cluster_severity;
           ALTER TABLE clusters DROP COLUMN name;
           ALTER TABLE revisions DROP COLUMN cluster_id;
           ALTER TABLE runs DROP COLUMN wal;
           ALTER TABLE revisions DROP COLUMN deleted_after;
           ALTER TABLE semantic_values DROP COLUMN redacted;
           ALTER TABLE runs DROP COLUMN restored;
           ALTER TABLE revisions DROP COLUMN foreign_evidence;
           PRAGMA user_version = 13;"#,
    )
    .unwrap();
    let old: Vec<String> = conn
        .prepare("SELECT path FROM field_paths WHERE path LIKE 'data.%'")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert!(old.contains(&"data.app.properties".to_string()), "{old:?}");
}

/// The Pod's repeated env entry is named by its container's merge key.
fn assert_repeated_env(db: &Path) {
    let dups = findings(db, "duplicate-entries");
    let summary = dups[0]["summary"].as_str().unwrap();
    assert!(
        summary.contains("spec.containers[name=web].env: name A ×2"),
        "{dups:#?}"
    );
}

#[test]
fn a_database_written_before_segmented_paths_reads_the_same_after_its_upgrade() {
    if sqlite_only("rewrites the SQLite file as an older release wrote it") {
        return;
    }
    let etcd = TestEtcd::start();
    let (_dir, db) = temp_db();
    fight(&etcd);
    let pod = "/registry/pods/shop/twice";
    etcd.put(
        pod,
        &encode_protobuf(&j!({"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "twice", "namespace": "shop", "uid": "u-p"},
            "spec": {"containers": [{"name": "web", "image": "w", "env": [{"name": "A", "value": "1"}, {"name": "A", "value": "2"}]}]}}))
        .unwrap(),
    );
    ok(snapshot(&etcd, &db, &["--sensitive-path", "data.plain"]));
    // What the clock says is rebuilt by the next analyze, not kept by
    // the upgrade: compare the rest.
    let without_clock = |out| {
        let mut rows = crate::util::json(out);
        for row in rows.as_array_mut().unwrap() {
            row.as_object_mut().unwrap().remove("written_between");
        }
        rows
    };
    // The old release stored no redacted forms (of the ConfigMap, keyed
    // for its data.plain): its diffs show what it would have.
    crate::util::backend::execute(&db, "UPDATE semantic_values SET redacted = NULL");
    let before = without_clock(inspector(&db, &["history", KEY, "--diff", "-o", "json"]));
    assert_repeated_env(&db);
    as_written_before_segments(&db);
    assert_eq!(
        without_clock(inspector(&db, &["history", KEY, "--diff", "-o", "json"])),
        before
    );
    // The next run compares with what the old release stored, and repeats
    // its sensitive path.
    etcd.put(
        KEY,
        &config("mode=charlie", j!([entry("deployer", "2026-11-29T09:00:00Z")])),
    );
    ok(snapshot(&etcd, &db, &["--sensitive-path", "data.plain"]));
    let rows = history(&db, KEY);
    let last = rows.last().unwrap();
    assert_eq!(
        (last["change_class"].as_str(), &last["changed_paths"]),
        (
            Some("spec"),
            &j!([r"data.app\.properties", "metadata.managedFields"])
        )
    );
    ok(inspector(&db, &["analyze"]));
    assert_repeated_env(&db);
}

/// `stats` counts a write as changing only timestamps by each changed
/// path's last member: a dotted key ending like a time field
/// (`data.build\.time`) is a key, not a `time` field.
#[test]
fn a_dotted_key_ending_in_time_is_no_timestamp_in_stats() {
    let etcd = TestEtcd::start();
    let (_dir, db) = temp_db();
    for (i, build) in ["2026-11-29", "2026-11-30", "2026-12-01"].into_iter().enumerate() {
        let value = encode_protobuf(&j!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "build", "namespace": "ci", "uid": "u-build",
                         "managedFields": [{"manager": "pipeline", "operation": "Update", "apiVersion": "v1",
                                            "time": format!("2026-12-01T0{i}:00:00Z"), "fieldsType": "FieldsV1",
                                            "fieldsV1": {"f:data": {"f:build.time": {}}}}]},
            "data": {"build.time": build}}))
        .unwrap();
        etcd.put("/registry/configmaps/ci/build", &value);
    }
    ok(snapshot(&etcd, &db, &[]));
    let stats: Value = serde_json::from_str(&text(inspector(&db, &["stats", "-o", "json"]))).unwrap();
    let pipeline: Vec<&Value> = stats["managers"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["manager"] == "pipeline")
        .collect();
    assert_eq!(pipeline.len(), 1, "{:#}", stats["managers"]);
    assert_eq!(
        (&pipeline[0]["writes"], &pipeline[0]["timestamps_only"]),
        (&j!(2), &j!(0)),
        "{:#}",
        pipeline[0]
    );
}
