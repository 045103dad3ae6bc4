//! Many writers into one PostgreSQL database, whatever
//! `ETCD_INSPECTOR_TEST_BACKEND` says: runs of two clusters at once, a
//! role with only what it needs (the schema a DBA made for it) and one
//! without, a connection lost in the middle of a run (recorded as failed),
//! and a database a newer version wrote.

use crate::util::etcd::TestEtcd;
use crate::util::k8s::pod;
use crate::util::postgres::{self, USER};
use crate::util::*;
use std::path::Path;
use std::time::{Duration, Instant};

/// Puts `n` Pods into `etcd`.
fn pods(etcd: &TestEtcd, n: usize) {
    let items: Vec<(String, Vec<u8>)> = (0..n)
        .map(|i| {
            (
                format!("/registry/pods/ns/p{i:05}"),
                pod("ns", &format!("p{i:05}"), &format!("u{i}"), "img"),
            )
        })
        .collect();
    etcd.put_many(&items);
}

/// A snapshot slow enough to overlap another: the history replayed three
/// revisions a page.
fn slow_snapshot(etcd: &TestEtcd, db: &Path, name: &str) -> std::process::Child {
    spawn_inspector(
        db,
        &[
            "snapshot",
            "--endpoints",
            &etcd.endpoint,
            "--fetch",
            "watch",
            "--page-size",
            "3",
            "--cluster",
            name,
        ],
    )
}

#[test]
fn two_clusters_are_written_at_once_and_one_cluster_by_one_run() {
    let Some(server) = postgres::shared() else { return };
    let uri = server.create_database();
    let dbname = uri.rsplit('/').next().unwrap().to_string();
    let db = Path::new(&uri);
    let (eu, us) = (TestEtcd::start(), TestEtcd::start());
    pods(&eu, 3000);
    pods(&us, 3000);
    let (mut a, mut b) = (slow_snapshot(&eu, db, "eu"), slow_snapshot(&us, db, "us"));
    // While both write, a second run of one of the clusters is refused,
    // naming the run that holds it.
    let deadline = Instant::now() + Duration::from_secs(180);
    while begun(server, &dbname) < 2 {
        for child in [&mut a, &mut b] {
            let failed = child.try_wait().unwrap().is_some_and(|s| !s.success());
            if failed || Instant::now() > deadline {
                let _ = child.kill();
                let status = child.wait().unwrap();
                let mut stderr = String::new();
                std::io::Read::read_to_string(child.stderr.as_mut().unwrap(), &mut stderr).unwrap();
                panic!("both runs never began: one ended {status:?}: {stderr}");
            }
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let refused = snapshot(&eu, db, &["--cluster", "eu"]);
    let err = one_line_error(&refused);
    assert!(
        err.contains("is being written for etcd cluster") && err.contains("by run"),
        "{err}"
    );
    for child in [a, b] {
        let out = child.wait_with_output().unwrap();
        assert_no_password(&out);
        assert_exit(&out, 0);
    }
    let all = runs(db);
    let complete: Vec<&serde_json::Value> = all.iter().filter(|r| r["status"] == "complete").collect();
    assert_eq!(complete.len(), 2, "{all:#?}");
    assert_ne!(complete[0]["cluster"], complete[1]["cluster"]);
    // Neither waited for the other: each began before the other ended.
    let (x, y) = (complete[0], complete[1]);
    assert!(
        x["started_at"].as_str() <= y["finished_at"].as_str()
            && y["started_at"].as_str() <= x["finished_at"].as_str(),
        "the runs overlap: {x:#?} {y:#?}"
    );
    for r in complete {
        assert_eq!(r["revisions_added"].as_i64(), Some(3000));
    }
}

#[test]
fn a_schema_made_by_a_dba_is_enough_and_a_role_without_it_is_told_so() {
    let Some(server) = postgres::shared() else { return };
    let uri = server.create_database();
    let dbname = uri.rsplit('/').next().unwrap().to_string();
    let mut admin = server.client(&dbname);
    admin
        .batch_execute(&format!(
            "CREATE ROLE writer_{dbname} LOGIN PASSWORD 'w-secret'; \
             CREATE ROLE nobody_{dbname} LOGIN PASSWORD 'n-secret'; \
             REVOKE CREATE ON DATABASE {dbname} FROM PUBLIC; \
             CREATE SCHEMA etcd_inspector AUTHORIZATION writer_{dbname};"
        ))
        .unwrap();
    let as_role = |role: &str, password: &str| {
        format!(
            "postgresql://{role}_{dbname}:{password}@127.0.0.1:{}/{dbname}",
            server.port
        )
    };
    let etcd = TestEtcd::start();
    pods(&etcd, 3);
    let writer = as_role("writer", "w-secret");
    ok(snapshot(&etcd, Path::new(&writer), &[]));
    ok(inspector(Path::new(&writer), &["analyze"]));
    assert_eq!(runs(Path::new(&writer))[0]["status"], "complete");

    let stranger = as_role("nobody", "n-secret");
    for args in [&["runs"][..], &["snapshot", "--endpoints", &etcd.endpoint]] {
        let out = inspector(Path::new(&stranger), args);
        let err = one_line_error(&out);
        assert!(err.contains("permission denied"), "{args:?}: {err}");
        assert!(
            err.contains(&format!("postgresql://nobody_{dbname}@127.0.0.1")),
            "{err}"
        );
        assert!(!stderr(&out).contains("n-secret"), "{}", stderr(&out));
    }
}

#[test]
fn a_connection_lost_mid_run_is_one_line_and_the_next_run_completes() {
    let Some(server) = postgres::shared() else { return };
    let uri = server.create_database();
    let dbname = uri.rsplit('/').next().unwrap().to_string();
    let db = Path::new(&uri);
    let etcd = TestEtcd::start();
    pods(&etcd, 3000);
    let child = slow_snapshot(&etcd, db, "lost");
    let deadline = Instant::now() + Duration::from_secs(60);
    while stored_revisions(db) == 0 {
        assert!(Instant::now() < deadline, "the run never committed anything");
        std::thread::sleep(Duration::from_millis(20));
    }
    server
        .client("postgres")
        .execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid() \
             AND application_name = 'etcd-inspector'",
            &[&dbname],
        )
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert_no_password(&out);
    assert_exit(&out, 1);
    let err = one_line_error(&out);
    assert!(
        err.contains(&format!("postgresql://{USER}@127.0.0.1:{}/{dbname}", server.port)),
        "{err}"
    );
    // It connected again to record how it ended.
    let all = runs(db);
    assert_eq!(all[0]["status"], "failed", "{:?}", all[0]);
    // The server's words ("terminating connection ...") or the client's
    // ("connection closed"), whichever saw it first.
    assert!(
        all[0]["error"]
            .as_str()
            .is_some_and(|e| e.contains(&dbname) && !e.contains(postgres::PASSWORD_ENCODED)),
        "{:?}",
        all[0]
    );
    ok(snapshot(&etcd, db, &["--cluster", "lost"]));
    let all = runs(db);
    assert_eq!(all[0]["status"], "failed", "{:?}", all[0]);
    assert_eq!(all[1]["status"], "complete");
    assert_eq!(stored_revisions(db), 3000, "nothing lost, nothing twice");
}

#[test]
fn a_database_a_newer_version_wrote_is_refused_before_anything_is_read() {
    let Some(server) = postgres::shared() else { return };
    let uri = server.create_database();
    let dbname = uri.rsplit('/').next().unwrap().to_string();
    let etcd = TestEtcd::start();
    pods(&etcd, 1);
    ok(snapshot(&etcd, Path::new(&uri), &[]));
    server
        .client(&dbname)
        .batch_execute("INSERT INTO etcd_inspector.schema_version (version) VALUES (99)")
        .unwrap();
    for args in [&["runs"][..], &["snapshot", "--endpoints", &etcd.endpoint]] {
        let err = one_line_error(&inspector(Path::new(&uri), args));
        assert!(
            err.contains("was written by a newer etcd-inspector (schema version 99; this one knows up to "),
            "{err}"
        );
    }
    assert_eq!(
        runs_of(server, &dbname),
        1,
        "the refused snapshot recorded nothing"
    );
}

/// How many runs the database holds, read behind the tool's back.
fn runs_of(server: &postgres::TestPostgres, dbname: &str) -> i64 {
    server
        .client(dbname)
        .query_one("SELECT count(*) FROM etcd_inspector.runs", &[])
        .unwrap()
        .get(0)
}

/// Runs that know their cluster, read behind the tool's back (none while
/// the first writer is still creating the schema).
fn begun(server: &postgres::TestPostgres, dbname: &str) -> i64 {
    let mut client = server.client(dbname);
    let exists: Option<String> = client
        .query_one("SELECT to_regclass('etcd_inspector.runs')::text", &[])
        .unwrap()
        .get(0);
    match exists {
        None => 0,
        Some(_) => client
            .query_one(
                "SELECT count(*) FROM etcd_inspector.runs WHERE cluster_id IS NOT NULL",
                &[],
            )
            .unwrap()
            .get(0),
    }
}

/// JSON output with what differs between two databases (row ids, times
/// of the runs themselves and the bounds they set on when each revision
/// was written) left out.
fn comparable(db: &Path, args: &[&str]) -> serde_json::Value {
    fn strip(v: &mut serde_json::Value) {
        match v {
            serde_json::Value::Object(m) => {
                for k in [
                    "id",
                    "run",
                    "run_id",
                    "started_at",
                    "finished_at",
                    "analyzed_at",
                    "generated_at",
                    "database",
                    "written_between",
                    "at",
                ] {
                    m.remove(k);
                }
                m.values_mut().for_each(strip);
            }
            serde_json::Value::Array(a) => a.iter_mut().for_each(strip),
            _ => {}
        }
    }
    let mut v = json(inspector(db, args));
    strip(&mut v);
    v
}

#[test]
fn the_same_source_stores_the_same_in_sqlite_and_postgresql() {
    use crate::util::k8s::{config_map, secret};
    let Some(uri) = postgres::database() else { return };
    let dir = tempfile::tempdir().unwrap();
    let sqlite = dir.path().join("same.sqlite");
    let key_file = dir.path().join("hash.key");
    std::fs::write(&key_file, "11".repeat(32)).unwrap();
    let key = key_file.to_str().unwrap();
    let etcd = TestEtcd::start();
    let cm = "/registry/configmaps/shop/web-config";
    let po = "/registry/pods/shop/web";
    let sec = "/registry/secrets/shop/db";
    let keys = [cm, po, sec];
    let step = |round: usize| {
        etcd.put(
            cm,
            &config_map(
                "shop",
                "web-config",
                "uid-cm",
                &[("app.properties", &format!("v={round}"))],
            ),
        );
        etcd.put(
            cm,
            &config_map(
                "shop",
                "web-config",
                "uid-cm",
                &[("app.properties", &format!("v={round}"))],
            ),
        );
        etcd.put(sec, &secret("shop", "db", "uid-s", &format!("pw-{round}")));
        etcd.delete(po);
        etcd.put(
            po,
            &pod("shop", "web", &format!("uid-p{round}"), &format!("web:{round}")),
        );
        for db in [sqlite.as_path(), Path::new(&uri)] {
            ok(snapshot(
                &etcd,
                db,
                &["--hash-key-file", key, "--cluster", "same"],
            ));
        }
    };
    step(1);
    step(2);
    for db in [sqlite.as_path(), Path::new(&uri)] {
        ok(inspector(db, &["prune", "--keep-runs", "1"]));
    }
    for args in keys
        .iter()
        .map(|k| vec!["history", k, "--diff", "-o", "json"])
        .chain([
            vec!["findings", "-o", "json"],
            vec!["stats", "-o", "json"],
            vec!["runs", "-o", "json"],
            vec!["report", "--format", "json"],
            vec!["show", "po/web", "-n", "shop", "--rev", "5", "-o", "json"],
        ])
    {
        assert_eq!(
            comparable(&sqlite, &args),
            comparable(Path::new(&uri), &args),
            "{args:?}"
        );
    }
}
