//! `copy`: runs taken into a SQLite file on a laptop join another
//! database (the suite's backend: SQLite, or PostgreSQL when the suite runs
//! against it) and come back, reading the same everywhere; a second copy
//! adds nothing, and `--cluster` copies one cluster's runs only.

use crate::util::etcd::TestEtcd;
use crate::util::k8s::{config_map, pod, secret};
use crate::util::*;
use serde_json::Value;
use std::path::Path;

const EU: &str = "prod-eu-1";
const US: &str = "prod-us-2";
const WEB: &str = "/registry/configmaps/shop/web-config";

fn copy(from: &Path, to: &Path, extra: &[&str]) -> String {
    let mut args = vec![
        "copy",
        "--from",
        from.to_str().unwrap(),
        "--to",
        to.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    String::from_utf8(ok(run_inspector(&args, None)).stdout).unwrap()
}

/// What a database says of the EU cluster, with row ids (which differ
/// between databases) left out.
fn view(db: &Path) -> Vec<Value> {
    let mut out = Vec::new();
    let secret = json(inspector(
        db,
        &["show", "secret/db", "-n", "shop", "--cluster", EU, "-o", "json"],
    ));
    let password = secret["data"]["password"].as_str().unwrap();
    assert!(password.starts_with("<redacted: keyed hash "), "{secret}");
    out.push(secret);
    for args in [
        &["history", WEB, "--cluster", EU, "--diff", "-o", "json"][..],
        &[
            "history",
            "/registry/pods/shop/web",
            "--cluster",
            EU,
            "-o",
            "json",
        ],
        &["findings", "--cluster", EU, "-o", "json"],
        &[
            "diff",
            "--cluster",
            EU,
            "--rev-a",
            "3",
            "--rev-b",
            "7",
            "-o",
            "json",
        ],
    ] {
        let mut v = json(inspector(db, args));
        strip(&mut v);
        out.push(v);
    }
    out
}

/// Removes run and row ids, and the analysis time.
fn strip(v: &mut Value) {
    match v {
        Value::Object(m) => {
            for id in ["run", "run_id", "id", "run_a", "run_b", "analyzed_at"] {
                m.remove(id);
            }
            m.values_mut().for_each(strip);
        }
        Value::Array(a) => a.iter_mut().for_each(strip),
        _ => {}
    }
}

#[test]
fn runs_copied_into_another_database_and_back_read_the_same() {
    let (eu, us) = (TestEtcd::start(), TestEtcd::start());
    let laptop_dir = tempfile::tempdir().unwrap();
    let laptop = laptop_dir.path().join("laptop.sqlite");
    let key = "/registry/pods/shop/web";
    eu.put(
        WEB,
        &config_map("shop", "web-config", "uid-web", &[("app.properties", "a=1")]),
    );
    eu.put(key, &pod("shop", "web", "uid-pod-a", "web:1"));
    eu.put(
        "/registry/secrets/shop/db",
        &secret("shop", "db", "uid-s", "copied-pass-31"),
    );
    ok(snapshot(&eu, &laptop, &["--cluster", EU]));
    eu.put(
        WEB,
        &config_map("shop", "web-config", "uid-web", &[("app.properties", "a=2")]),
    );
    eu.put(
        WEB,
        &config_map("shop", "web-config", "uid-web", &[("app.properties", "a=2")]),
    );
    eu.delete(key);
    eu.put(key, &pod("shop", "web", "uid-pod-b", "web:2"));
    ok(snapshot(&eu, &laptop, &["--cluster", EU]));
    us.put(
        WEB,
        &config_map("shop", "web-config", "uid-us", &[("mode", "us")]),
    );
    ok(snapshot(&us, &laptop, &["--cluster", US]));

    // The fleet's database already holds another cluster, so its ids
    // (field paths among them) differ from the laptop's.
    let (_fleet_dir, fleet) = temp_db();
    let other = TestEtcd::start();
    other.put(
        "/registry/secrets/ops/token",
        &config_map("ops", "token", "uid-t", &[("x.y/z", "1")]),
    );
    ok(snapshot(&other, &fleet, &["--cluster", "ops-1"]));

    let said = copy(&laptop, &fleet, &["--cluster", EU]);
    assert!(said.starts_with("copied 2 runs (0 already there)"), "{said}");
    let runs = json(inspector(&fleet, &["runs", "-o", "json"]));
    let clusters: Vec<&str> = runs
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["cluster"].as_str().unwrap())
        .collect();
    assert_eq!(clusters, ["ops-1", EU, EU], "only EU's runs came");
    assert_eq!(view(&fleet), view(&laptop));

    let again = copy(&laptop, &fleet, &[]);
    assert!(
        again.starts_with("copied 1 runs (2 already there)"),
        "only US was new: {again}"
    );
    assert_eq!(view(&fleet), view(&laptop));

    let back_dir = tempfile::tempdir().unwrap();
    let back = back_dir.path().join("back.sqlite");
    copy(&fleet, &back, &["--cluster", EU]);
    assert_eq!(view(&back), view(&laptop));
    // The Secret, and ops-1's value stored under a Secret's key.
    assert_eq!(assert_secrets_nowhere(&fleet, &["copied-pass-31"]), 2);
    let refused = run_inspector(
        &[
            "copy",
            "--from",
            laptop.to_str().unwrap(),
            "--to",
            back.to_str().unwrap(),
            "--run",
            "99",
        ],
        None,
    );
    assert_exit(&refused, 1);
    assert!(
        stderr(&refused).contains("no finished run 99"),
        "{}",
        stderr(&refused)
    );
}

#[test]
fn a_damaged_source_fails_naming_the_column_and_leaves_the_target_as_it_was() {
    let eu = TestEtcd::start();
    // More rows than a page of the copy, so a copy committed in pages
    // would keep part of the run.
    let items: Vec<(String, Vec<u8>)> = (0..2500)
        .map(|i| {
            let name = format!("settings-{i:04}");
            let entry = format!("a={i}");
            let value = config_map("shop", &name, &format!("uid-{i}"), &[("app.properties", &entry)]);
            (format!("/registry/configmaps/shop/{name}"), value)
        })
        .collect();
    eu.put_many(&items);
    let laptop_dir = tempfile::tempdir().unwrap();
    let laptop = laptop_dir.path().join("laptop.sqlite");
    ok(snapshot(&eu, &laptop, &["--cluster", EU]));
    // The last revision the copy reads names a key the file does not hold.
    // (Written as another tool would, without foreign keys checked.)
    let conn = rusqlite::Connection::open(&laptop).unwrap();
    conn.execute_batch("PRAGMA foreign_keys = OFF").unwrap();
    let changed = conn
        .execute(
            "UPDATE revisions SET key_id = 424242 WHERE key_id = (SELECT max(key_id) FROM revisions)",
            [],
        )
        .unwrap();
    assert_eq!(changed, 1);
    drop(conn);

    let (_dir, fleet) = temp_db();
    let other = TestEtcd::start();
    other.put(
        WEB,
        &config_map("shop", "web-config", "uid-w", &[("mode", "ops")]),
    );
    ok(snapshot(&other, &fleet, &["--cluster", "ops-1"]));
    let before = (runs_json(&fleet), stats_json(&fleet));

    let failed = run_inspector(
        &[
            "copy",
            "--from",
            laptop.to_str().unwrap(),
            "--to",
            fleet.to_str().unwrap(),
        ],
        None,
    );
    assert_exit(&failed, 1);
    let said = stderr(&failed);
    assert_eq!(said.trim().lines().count(), 1, "one line: {said}");
    assert!(
        said.contains("laptop.sqlite is damaged: revisions.key_id: refers to row 424242"),
        "{said}"
    );
    assert_eq!(
        (runs_json(&fleet), stats_json(&fleet)),
        before,
        "nothing of the copy stays"
    );
}

fn runs_json(db: &Path) -> Value {
    json(inspector(db, &["runs", "-o", "json"]))
}

fn stats_json(db: &Path) -> Value {
    json(inspector(db, &["stats", "-o", "json"]))
}
