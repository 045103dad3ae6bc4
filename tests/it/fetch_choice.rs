//! How a live run fetches history (`--fetch auto|watch|snapshot`): `auto`
//! downloads the snapshot for a long first run and watches a short
//! incremental one, both store exactly what a Watch replay stores, and a
//! refused download falls back to Watch with one warning.

use crate::util::etcd::{etcd_version, TestEtcd};
use crate::util::*;
use std::path::Path;

/// A stored revision: key, revision, deleted, value hash.
type Stored = (String, i64, bool, Option<String>);

/// Every stored revision.
fn contents(db: &Path) -> Vec<Stored> {
    every_revision(db)
        .into_iter()
        .map(|(key, r)| (key, r.mod_revision.0, r.deleted, r.value_sha256))
        .collect()
}

/// Enough history that replaying it costs more than downloading the file.
fn long_history(etcd: &TestEtcd) {
    for round in 0..3 {
        let batch: Vec<(String, Vec<u8>)> = (0..2000)
            .map(|i| {
                let value = k8s::config_map(
                    "shop",
                    &format!("cm-{i}"),
                    &format!("uid-{i}"),
                    &[("round", &round.to_string())],
                );
                (format!("/registry/configmaps/shop/cm-{i}"), value)
            })
            .collect();
        etcd.put_many(&batch);
    }
}

fn fetched(db: &Path) -> Vec<String> {
    runs(db)
        .iter()
        .map(|r| r["fetched"].as_str().unwrap_or("-").to_string())
        .collect()
}

#[test]
fn auto_downloads_a_long_first_run_and_watches_a_short_one() {
    let etcd = TestEtcd::start();
    long_history(&etcd);
    let (_dir, db) = temp_db();
    ok(snapshot(&etcd, &db, &[]));
    etcd.put(
        "/registry/configmaps/shop/cm-1",
        &k8s::config_map("shop", "cm-1", "uid-1", &[("round", "9")]),
    );
    ok(snapshot(&etcd, &db, &[]));
    assert_eq!(fetched(&db), ["snapshot", "watch"]);
    // The same history through Watch alone.
    let (_watch_dir, watched) = temp_db();
    ok(snapshot(&etcd, &watched, &["--fetch", "watch"]));
    assert_eq!(fetched(&watched), ["watch"]);
    let (a, b) = (contents(&db), contents(&watched));
    assert_eq!(a.len(), 6001);
    assert!(a == b, "auto stored what a Watch replay stores");
    if sqlite_only("the rest looks for temporary files beside a SQLite file") {
        return;
    }
    // No temporary file is left next to the database.
    let leftovers: Vec<_> = std::fs::read_dir(db.parent().unwrap())
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().ends_with(".tmp"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
}

#[test]
fn a_refused_download_falls_back_to_watch() {
    let mut etcd = TestEtcd::start();
    long_history(&etcd);
    etcd.add_full_reader("viewer", "viewer-secret");
    etcd.enable_auth("root-secret", "reader-secret");
    let (_dir, db) = temp_db();
    let creds = ["--user", "viewer", "--password", "viewer-secret"];
    let out = ok(snapshot(&etcd, &db, &creds));
    let err = stderr(&out);
    // etcd 3.4.45 answers Status only to root: without the data file's size
    // there is nothing to weigh, so auto watches without trying (the
    // version comes from `/version` then).
    let status_answered = etcd.status_answers("viewer", "viewer-secret");
    assert_eq!(runs(&db)[0]["etcd_version"], etcd_version().as_str());
    assert_eq!(
        err.matches("warning: ").count(),
        usize::from(status_answered),
        "{err}"
    );
    if status_answered {
        assert!(
            err.contains(
                "permission denied to download the snapshot; replaying the history through Watch instead"
            ),
            "{err}"
        );
    }
    assert_eq!(fetched(&db), ["watch"]);
    assert_eq!(contents(&db).len(), 6000);
    // Asked for explicitly, a refused download is the run's error.
    let (_d2, refused) = temp_db();
    let mut args = creds.to_vec();
    args.extend(["--fetch", "snapshot"]);
    let line = one_line_error(&snapshot(&etcd, &refused, &args));
    assert!(
        line.contains("permission denied to download the snapshot"),
        "{line}"
    );
    assert_eq!(run_statuses(&refused), ["failed"]);
}
