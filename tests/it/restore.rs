//! etcd's data dir put back to an older copy between two runs (a volume
//! restore), or etcd restored from a backup with `etcdutl snapshot
//! restore`: the next run finds it, records it, fails without storing a
//! revision of the restored timeline, and `analyze` reports it.

use crate::util::etcd::TestEtcd;
use crate::util::k8s::pod;
use crate::util::{
    etcdutl, findings, inspector, ok, one_line_error, runs, snapshot, stored_revisions, temp_db,
};
use serde_json::json;

const KEYS: [&str; 3] = [
    "/registry/pods/shop/a",
    "/registry/pods/shop/b",
    "/registry/pods/shop/c",
];

/// etcd with three pods, recorded by run 1; a copy of its data dir then;
/// the pods changed (one deleted) and recorded by run 2. Returns the copy
/// and run 2's head, etcd stopped.
fn recorded_then_copied(etcd: &mut TestEtcd, db: &std::path::Path, copy: &std::path::Path) -> i64 {
    for key in KEYS {
        let name = key.rsplit('/').next().unwrap();
        etcd.put(key, &pod("shop", name, name, "web:1"));
    }
    ok(snapshot(etcd, db, &["--no-analyze"]));
    etcd.copy_data_dir(copy);
    for key in &KEYS[..2] {
        let name = key.rsplit('/').next().unwrap();
        etcd.put(key, &pod("shop", name, name, "web:2"));
    }
    etcd.delete(KEYS[2]);
    ok(snapshot(etcd, db, &["--no-analyze"]));
    let head = etcd.head();
    etcd.stop();
    head
}

#[test]
fn a_volume_restore_fails_the_runs_after_it_and_is_a_finding() {
    let mut etcd = TestEtcd::start();
    let (_dir, db) = temp_db();
    let copy = tempfile::tempdir().unwrap();
    let head = recorded_then_copied(&mut etcd, &db, copy.path());
    let stored = stored_revisions(&db);
    let etcd = TestEtcd::start_on(copy.path());
    let restored_head = etcd.head();
    assert!(restored_head < head, "{restored_head} < {head}");

    // The head went backwards.
    let err = one_line_error(&snapshot(&etcd, &db, &["--no-analyze"]));
    assert!(
        err.contains(&format!(
            "etcd was restored or rewound since run 2: head {restored_head} (run 2: {head})"
        )),
        "{err}"
    );
    assert!(
        err.contains("record the restored cluster into a new database"),
        "{err}"
    );
    let r = runs(&db);
    assert_eq!(r.len(), 3);
    assert_eq!(r[2]["status"], "failed");
    assert_eq!(
        r[2]["restored"],
        json!({"previous_run": 2, "prefix": "/registry/", "previous_head": head, "previous_compact": 0,
               "head": restored_head, "compact": 0})
    );
    assert_eq!(stored_revisions(&db), stored, "nothing stored");

    // New writes reuse the revisions run 2 stored, past its head.
    let mut written = Vec::new();
    while etcd.head() <= head {
        let name = format!("new-{}", written.len());
        let key = format!("/registry/pods/shop/{name}");
        written.push((key.clone(), etcd.put(&key, &pod("shop", &name, &name, "web:3"))));
    }
    let out = snapshot(&etcd, &db, &["--no-analyze"]);
    let err = one_line_error(&out);
    assert!(
        err.contains(&format!("at revision {head}, which both hold")),
        "{err}"
    );
    let r = runs(&db);
    assert_eq!(r.len(), 4);
    assert_eq!(r[3]["status"], "failed");
    let diverged = &r[3]["restored"]["diverged"];
    // a and b stored at their updates, c stored deleted, every new pod
    // etcd holds at run 2's head.
    let at_head = written.iter().filter(|(_, rev)| *rev <= head).count();
    assert_eq!(diverged["at"], head, "{diverged}");
    assert_eq!(diverged["keys"], 3 + at_head, "{diverged}");
    assert_eq!(diverged["key"], "/registry/pods/shop/a", "{diverged}");
    assert_eq!(diverged["stored"]["mod_revision"], head - 2, "{diverged}");
    assert_eq!(
        stored_revisions(&db),
        stored,
        "no revision of the restored timeline is stored"
    );
    for (key, _) in &written {
        let err = one_line_error(&inspector(&db, &["history", key]));
        assert!(err.contains("no revisions of"), "{err}");
    }
    let table = String::from_utf8(ok(inspector(&db, &["runs"])).stdout).unwrap();
    assert!(
        table.contains(&format!("failed (restored: head {head} → {restored_head})")),
        "{table}"
    );

    ok(inspector(&db, &["analyze"]));
    let found = findings(&db, "restored");
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(found[0]["severity"], "high");
    assert_eq!(found[0]["details"]["runs"], json!([3, 4]));
    assert_eq!(found[0]["revisions"], json!([restored_head, head]));
    let summary = found[0]["summary"].as_str().unwrap();
    assert!(
        summary.contains(&format!(
            "after run 2 (head {head}): run 3 (and 1 later run) found head"
        )),
        "{summary}"
    );
}

#[test]
fn data_files_of_a_restored_etcd_are_refused() {
    let mut etcd = TestEtcd::start();
    let (_dir, db) = temp_db();
    let copy = tempfile::tempdir().unwrap();
    let head = recorded_then_copied(&mut etcd, &db, copy.path());
    let stored = stored_revisions(&db);
    let file_run = |file: &std::path::Path| {
        one_line_error(&inspector(
            &db,
            &["snapshot", "--file", file.to_str().unwrap(), "--no-analyze"],
        ))
    };

    // The copy is older than what is stored.
    let err = file_run(&copy.path().join("member/snap/db"));
    assert!(err.contains(&format!("(run 2: {head})")), "{err}");
    assert_eq!(runs(&db)[2]["restored"]["previous_head"], head);

    // The restored etcd's file once new writes passed run 2's head.
    let mut restored = TestEtcd::start_on(copy.path());
    while restored.head() <= head {
        restored.put("/registry/pods/shop/d", &pod("shop", "d", "d", "web:3"));
    }
    // etcd commits its backend every 100 ms: let the file hold the writes.
    std::thread::sleep(std::time::Duration::from_secs(1));
    restored.stop();
    let err = file_run(&restored.db_file());
    assert!(
        err.contains(&format!("at revision {head}, which both hold")),
        "{err}"
    );
    let diverged = &runs(&db)[3]["restored"]["diverged"];
    assert_eq!(diverged["key"], "/registry/pods/shop/a", "{diverged}");
    assert_eq!(stored_revisions(&db), stored, "nothing stored");
}

/// A backup taken as `etcdctl snapshot save` takes one (`--fetch snapshot
/// --save`), restored after run 2 with `etcdutl snapshot restore` into a
/// new data dir. The restore forms a new etcd cluster (its own token, so
/// another cluster id): a run under the cluster's name finds etcd's id
/// changed, records it, fails, and `analyze` reports it.
#[test]
fn a_backup_restored_by_etcdutl_is_found_under_the_cluster_name() {
    let Some(etcdutl) = etcdutl() else { return };
    let mut etcd = TestEtcd::start();
    let (_dir, db) = temp_db();
    let scratch = tempfile::tempdir().unwrap();
    let backup = scratch.path().join("backup.db");
    let named = ["--no-analyze", "--cluster", "prod"];
    for key in KEYS {
        let name = key.rsplit('/').next().unwrap();
        etcd.put(key, &pod("shop", name, name, "web:1"));
    }
    ok(snapshot(&etcd, &db, &named));
    let save = [
        "--no-analyze",
        "--fetch",
        "snapshot",
        "--save",
        backup.to_str().unwrap(),
    ];
    ok(snapshot(&etcd, &scratch.path().join("backup.sqlite"), &save));
    for key in &KEYS[..2] {
        let name = key.rsplit('/').next().unwrap();
        etcd.put(key, &pod("shop", name, name, "web:2"));
    }
    ok(snapshot(&etcd, &db, &named));
    let head = etcd.head();
    etcd.stop();
    let stored = stored_revisions(&db);
    let before = runs(&db)[1]["cluster_id"].as_str().unwrap().to_string();

    let restored = scratch.path().join("restored");
    let out = std::process::Command::new(etcdutl)
        .args(["snapshot", "restore"])
        .arg(&backup)
        .arg("--data-dir")
        .arg(&restored)
        .args([
            "--name",
            "test",
            "--initial-cluster",
            "test=http://127.0.0.1:2380",
        ])
        .args(["--initial-advertise-peer-urls", "http://127.0.0.1:2380"])
        .args(["--initial-cluster-token", "restored-from-backup"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let etcd = TestEtcd::start_on(&restored);
    let restored_head = etcd.head();
    assert!(restored_head < head, "{restored_head} < {head}");

    let err = one_line_error(&snapshot(&etcd, &db, &named));
    assert!(
        err.contains("etcd was restored or rewound since run 2: etcd cluster id "),
        "{err}"
    );
    assert!(
        err.contains(&format!(
            "(run 2: {before}), head {restored_head} (run 2: {head})"
        )),
        "{err}"
    );
    assert!(
        err.contains("if it is another cluster, give it another --cluster name"),
        "{err}"
    );
    let r = runs(&db);
    assert_eq!(r.len(), 3);
    assert_eq!(r[2]["status"], "failed");
    let change = &r[2]["restored"]["etcd_cluster"];
    assert_eq!(change["from"], before.as_str(), "{change}");
    let after = change["to"].as_str().unwrap().to_string();
    assert_ne!(after, before);
    assert_eq!(stored_revisions(&db), stored, "nothing stored");
    let table = String::from_utf8(ok(inspector(&db, &["runs"])).stdout).unwrap();
    assert!(
        table.contains(&format!(
            "failed (restored: etcd cluster id {before} → {after}, head {head} → {restored_head})"
        )),
        "{table}"
    );

    ok(inspector(&db, &["analyze"]));
    let found = findings(&db, "restored");
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(found[0]["severity"], "high");
    assert_eq!(found[0]["revisions"], json!([restored_head, head]));
    assert_eq!(
        found[0]["details"]["restore"]["etcd_cluster"]["to"],
        after.as_str()
    );
    let summary = found[0]["summary"].as_str().unwrap();
    assert!(
        summary.starts_with("another etcd cluster answered under this cluster's name after run 2")
            && summary.contains(&format!("run 3 found etcd cluster id {before} → {after}")),
        "{summary}"
    );

    // Under no name, or another, the restored etcd is a cluster of its own.
    ok(snapshot(
        &etcd,
        &db,
        &["--no-analyze", "--cluster", "prod-restored"],
    ));
    assert_eq!(runs(&db)[3]["status"], "complete");
}
