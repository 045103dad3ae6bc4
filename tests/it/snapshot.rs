//! `snapshot`, `runs` and `history` against a real etcd started by the test,
//! holding Kubernetes-encoded values.

use crate::util::etcd::{etcd_version, TestEtcd, Tls};
use crate::util::k8s::{pod, secret, widget};
use crate::util::proxy::Proxy;
use crate::util::{
    assert_consistent, assert_exit, assert_secrets_nowhere, closed_endpoint, delete_revisions, findings,
    history, inspector, mod_revisions, ok, one_line_error, run_statuses, runs, snapshot, spawn_inspector,
    stderr, stored_revisions, stored_revisions_of, temp_db, terminate,
};
use etcd_inspector::source::server_version::ServerVersion;
use std::path::{Path, PathBuf};
use std::process::Output;

/// A new etcd holds nothing at revision 1: both fetch modes end at once
/// with an empty, complete run (they used to wait for an event at revision
/// 1 that never comes).
#[test]
fn a_new_empty_etcd_gives_an_empty_complete_run() {
    let etcd = TestEtcd::start();
    for fetch in ["auto", "watch"] {
        let (_dir, db) = temp_db();
        let child = spawn_inspector(
            &db,
            &[
                "snapshot",
                "--endpoints",
                &etcd.endpoint,
                "--fetch",
                fetch,
                "--no-analyze",
            ],
        );
        let start = std::time::Instant::now();
        let mut child = child;
        while child.try_wait().unwrap().is_none() {
            if start.elapsed() > std::time::Duration::from_secs(60) {
                let out = terminate(child);
                panic!(
                    "--fetch {fetch} on an empty etcd still runs after 60 s: {}",
                    stderr(&out)
                );
            }
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
        let out = child.wait_with_output().unwrap();
        assert_exit(&out, 0);
        let run = &runs(&db)[0];
        assert_eq!(run["status"], "complete", "--fetch {fetch}");
        assert_eq!(run["keys_seen"], 0, "--fetch {fetch}: {run}");
    }
}

#[test]
fn history_of_create_update_rewrite_delete_recreate() {
    let etcd = TestEtcd::start();
    let (_dir, db) = temp_db();
    let key = "/registry/pods/shop/web";
    let first = pod("shop", "web", "uid-a", "web:1");
    let created = etcd.put(key, &first);
    let updated = etcd.put(key, &pod("shop", "web", "uid-a", "web:2"));
    let rewritten = etcd.put(key, &pod("shop", "web", "uid-a", "web:2"));
    let deleted = etcd.delete(key);
    let recreated = etcd.put(key, &pod("shop", "web", "uid-b", "web:2"));
    let cr_key = "/registry/example.com/widgets/shop/blue";
    let cr = etcd.put(cr_key, &widget("shop", "blue", "uid-w", 3));

    let out = ok(snapshot(&etcd, &db, &[]));
    let summary = String::from_utf8_lossy(&out.stderr);
    assert!(
        summary.contains("run 1 complete: 2 keys") && summary.contains("6 revisions added"),
        "{summary}"
    );

    let h = history(&db, key);
    let got: Vec<(i64, i64, i64, bool, Option<&str>)> = h
        .iter()
        .map(|r| {
            (
                r["mod_revision"].as_i64().unwrap(),
                r["create_revision"].as_i64().unwrap(),
                r["version"].as_i64().unwrap(),
                r["deleted"].as_bool().unwrap(),
                r["uid"].as_str(),
            )
        })
        .collect();
    assert_eq!(
        got,
        vec![
            (created, created, 1, false, Some("uid-a")),
            (updated, created, 2, false, Some("uid-a")),
            (rewritten, created, 3, false, Some("uid-a")),
            (deleted, created, 0, true, None),
            (recreated, recreated, 1, false, Some("uid-b")),
        ]
    );
    assert_eq!(
        h[1]["value_sha256"], h[2]["value_sha256"],
        "an identical rewrite stores the same bytes"
    );
    assert_ne!(h[0]["value_sha256"], h[1]["value_sha256"]);
    assert!(h[3]["value_sha256"].is_null());
    for r in [&h[0], &h[1], &h[2], &h[4]] {
        assert_eq!(
            (
                r["encoding"].as_str(),
                r["kind"].as_str(),
                r["api_version"].as_str()
            ),
            (Some("protobuf"), Some("Pod"), Some("v1"))
        );
    }
    let w = history(&db, cr_key);
    assert_eq!(w.len(), 1);
    assert_eq!(
        (
            w[0]["mod_revision"].as_i64(),
            w[0]["encoding"].as_str(),
            w[0]["uid"].as_str()
        ),
        (Some(cr), Some("json"), Some("uid-w"))
    );

    let r = runs(&db);
    assert_eq!(r.len(), 1);
    assert_eq!(
        (
            r[0]["status"].as_str(),
            r[0]["head_revision"].as_i64(),
            r[0]["revisions_added"].as_i64()
        ),
        (Some("complete"), Some(cr), Some(6))
    );
    assert_eq!(r[0]["compact_revision"].as_i64(), Some(0));
    assert_eq!(r[0]["source"].as_str(), Some(etcd.endpoint.as_str()));

    let table = String::from_utf8_lossy(&ok(inspector(&db, &["history", key])).stdout).into_owned();
    assert!(table.contains("delete"), "{table}");
    let wide =
        String::from_utf8_lossy(&ok(inspector(&db, &["history", key, "-o", "wide"])).stdout).into_owned();
    assert!(wide.contains("uid-b") && wide.contains("(deleted)"), "{wide}");
}

fn server() -> ServerVersion {
    ServerVersion::parse(&etcd_version()).unwrap()
}

/// The scenario etcd 3.4.23 and 3.5.1 lost to early progress notifications
/// (etcd issue 15220): every revision is stored, by a first run and by an
/// incremental one, and each run names the server's version.
#[test]
fn five_writes_then_three_more_store_every_revision() {
    let etcd = TestEtcd::start();
    let (_dir, db) = temp_db();
    let key = "/registry/pods/shop/web";
    let mut want = vec![
        (etcd.put(key, &pod("shop", "web", "uid-a", "web:1")), false),
        (etcd.put(key, &pod("shop", "web", "uid-a", "web:2")), false),
        (etcd.put(key, &pod("shop", "web", "uid-a", "web:3")), false),
        (etcd.delete(key), true),
        (etcd.put(key, &pod("shop", "web", "uid-b", "web:3")), false),
    ];
    ok(snapshot(&etcd, &db, &[]));
    assert_eq!(stored_revisions_of(&db, key), want);
    for image in ["web:4", "web:5", "web:6"] {
        want.push((etcd.put(key, &pod("shop", "web", "uid-b", image)), false));
    }
    ok(snapshot(&etcd, &db, &[]));
    assert_eq!(stored_revisions_of(&db, key), want);
    let r = runs(&db);
    let seen: Vec<(&str, i64, &str)> = r
        .iter()
        .map(|x| {
            (
                x["status"].as_str().unwrap(),
                x["revisions_added"].as_i64().unwrap(),
                x["etcd_version"].as_str().unwrap(),
            )
        })
        .collect();
    let version = etcd_version();
    assert_eq!(
        seen,
        [
            ("complete", 5, version.as_str()),
            ("complete", 3, version.as_str())
        ]
    );
    let table = String::from_utf8(ok(inspector(&db, &["runs", "-o", "wide"])).stdout).unwrap();
    assert!(table.contains("ETCD") && table.contains(&version), "{table}");
}

/// A database whose history lost revisions (as one written over etcd 3.4.23
/// by an earlier release did) fails the next run instead of calling it
/// complete; what the run stored stays.
#[test]
fn a_stored_history_shorter_than_etcd_counts_fails_the_run() {
    let etcd = TestEtcd::start();
    let (_dir, db) = temp_db();
    let key = "/registry/pods/shop/web";
    let revs: Vec<i64> = (1..=5)
        .map(|i| etcd.put(key, &pod("shop", "web", "uid-a", &format!("web:{i}"))))
        .collect();
    ok(snapshot(&etcd, &db, &[]));
    assert_eq!(delete_revisions(&db, key, &revs[..3]), 3);
    let sixth = etcd.put(key, &pod("shop", "web", "uid-a", "web:6"));
    let out = snapshot(&etcd, &db, &[]);
    let err = one_line_error(&out);
    assert!(
        err.contains(&format!(
            "history incomplete: 1 key has fewer revisions than etcd counts, e.g. {key}: stored 3 of 6"
        )),
        "{err}"
    );
    let r = runs(&db);
    assert_eq!(r.len(), 2);
    assert_eq!(r[1]["status"].as_str(), Some("failed"));
    assert!(
        r[1]["error"].as_str().unwrap().contains("stored 3 of 6"),
        "{:?}",
        r[1]
    );
    assert_eq!(
        stored_revisions_of(&db, key),
        [(revs[3], false), (revs[4], false), (sixth, false)],
        "what the failed run stored is kept"
    );
}

/// A watch cut in the middle of the history is a failed run, never a
/// complete one over a hole.
#[test]
fn a_replay_cut_midway_fails_the_run() {
    let etcd = TestEtcd::start();
    let key = "/registry/configmaps/shop/settings";
    let items: Vec<(String, Vec<u8>)> = (0..400)
        .map(|i| {
            (
                key.to_string(),
                format!("{i:04}{}", "x".repeat(4000)).into_bytes(),
            )
        })
        .collect();
    etcd.put_many_sequential(&items);
    let proxy = Proxy::new(&etcd.endpoint);
    // The state read and the first of the history pass; the cut comes while
    // the 3 MB of revisions stream.
    proxy.cut_after(600_000);
    let (_dir, db) = temp_db();
    let out = inspector(
        &db,
        &[
            "snapshot",
            "--endpoints",
            &proxy.endpoint,
            "--dial-timeout",
            "2s",
            "--command-timeout",
            "5s",
        ],
    );
    let err = one_line_error(&out);
    assert!(err.contains("run 1 failed"), "{err}");
    let r = runs(&db);
    assert_eq!(r.len(), 1);
    assert_eq!(r[0]["status"].as_str(), Some("failed"), "{:?}", r[0]);
    assert!(r[0]["revisions_added"].as_i64().unwrap() < 400, "{:?}", r[0]);
}

/// Turns auth on with user `inspector` reading `/registry/` and `keys`, and
/// snapshots as that user into a new database.
fn snapshot_as_prefix_reader(etcd: &mut TestEtcd, keys: &[&str]) -> (tempfile::TempDir, PathBuf, Output) {
    etcd.add_prefix_reader("inspector", "inspector-secret", "/registry/", keys);
    etcd.enable_auth("root-secret", "reader-secret");
    let (dir, db) = temp_db();
    let out = snapshot(
        etcd,
        &db,
        &["--user", "inspector", "--password", "inspector-secret"],
    );
    (dir, db, out)
}

/// Credentials that may read only the prefix cannot watch every key: the
/// replay watches the prefix and ends on a progress notification where etcd
/// sends those after the events they cover, and refuses where it does not.
#[test]
fn credentials_limited_to_the_prefix() {
    let mut etcd = TestEtcd::start();
    let key = "/registry/pods/shop/web";
    let revs: Vec<(i64, bool)> = (1..=4)
        .map(|i| {
            (
                etcd.put(key, &pod("shop", "web", "uid-a", &format!("web:{i}"))),
                false,
            )
        })
        .collect();
    etcd.put("/other-app/config", b"outside the prefix");
    let (_dir, db, out) = snapshot_as_prefix_reader(&mut etcd, &["compact_rev_key"]);
    let run = runs(&db)[0].clone();
    // Some releases (3.4.45) answer Status only to administrators: the run
    // learns the version from `/version` on the client port then.
    assert_eq!(
        run["etcd_version"].as_str(),
        Some(etcd_version().as_str()),
        "{run:?}"
    );
    if server().progress_is_ordered() {
        ok(out);
        assert_eq!(run["status"].as_str(), Some("complete"));
        assert_eq!(stored_revisions_of(&db, key), revs);
    } else {
        let err = one_line_error(&out);
        assert!(
            err.contains("etcd issue 15220") && err.contains("cannot be confirmed"),
            "{err}"
        );
        assert_eq!(run["status"].as_str(), Some("failed"));
    }
}

/// Read access to the prefix alone is not enough: a refused read says which
/// key it was and the `etcdctl` line that grants it.
#[test]
fn a_denied_read_names_the_key_and_the_permission_to_grant() {
    let mut etcd = TestEtcd::start();
    etcd.put("/registry/pods/shop/web", &pod("shop", "web", "uid-a", "web:1"));
    let (_dir, _db, out) = snapshot_as_prefix_reader(&mut etcd, &[]);
    let err = one_line_error(&out);
    assert!(
        err.contains("permission denied reading key compact_rev_key")
            && err.contains("user inspector")
            && err.contains("etcdctl role grant-permission ROLE read compact_rev_key"),
        "{err}"
    );
}

/// When the head is the compaction revision and holds only a delete, etcd
/// up to 3.4.33 and 3.5.15 dropped its tombstone, so no event at the head
/// will ever come: the run ends anyway, with exactly what etcd retains.
#[test]
fn a_head_that_compaction_emptied_ends_the_replay() {
    let etcd = TestEtcd::start();
    let (_dir, db) = temp_db();
    let key = "/registry/pods/shop/web";
    etcd.put(key, &pod("shop", "web", "uid-a", "web:1"));
    let deleted = etcd.delete(key);
    etcd.compact(deleted);
    ok(snapshot(&etcd, &db, &["--command-timeout", "20s"]));
    let r = runs(&db);
    assert_eq!(
        (
            r[0]["status"].as_str(),
            r[0]["head_revision"].as_i64(),
            r[0]["compact_revision"].as_i64()
        ),
        (Some("complete"), Some(deleted), Some(deleted))
    );
    if server().keeps_tombstone_at_compaction() {
        assert_eq!(stored_revisions_of(&db, key), [(deleted, true)]);
        assert_eq!(r[0]["revisions_added"].as_i64(), Some(1));
    } else {
        assert_eq!(
            r[0]["revisions_added"].as_i64(),
            Some(0),
            "etcd kept nothing of the key"
        );
    }
}

#[test]
fn later_runs_add_only_new_revisions() {
    let etcd = TestEtcd::start();
    let (_dir, db) = temp_db();
    for i in 0..5 {
        etcd.put(
            &format!("/registry/pods/ns/p{i}"),
            &pod("ns", &format!("p{i}"), &format!("u{i}"), "img:1"),
        );
    }
    ok(snapshot(&etcd, &db, &[]));
    ok(snapshot(&etcd, &db, &[]));
    let a = etcd.put("/registry/pods/ns/p1", &pod("ns", "p1", "u1", "img:2"));
    let b = etcd.delete("/registry/pods/ns/p2");
    // The newest revision lies outside the prefix: the replay must still end.
    let outside = etcd.put("/other-app/config", b"x");
    ok(snapshot(&etcd, &db, &[]));
    let r = runs(&db);
    let added: Vec<i64> = r.iter().map(|x| x["revisions_added"].as_i64().unwrap()).collect();
    assert_eq!(added, vec![5, 0, 2]);
    assert_eq!(r[2]["head_revision"].as_i64(), Some(outside));
    assert_eq!(
        history(&db, "/registry/pods/ns/p2").last().unwrap()["mod_revision"].as_i64(),
        Some(b)
    );
    assert_eq!(
        r[2]["history_from"].as_i64(),
        Some(r[1]["head_revision"].as_i64().unwrap() + 1)
    );
    let h = history(&db, "/registry/pods/ns/p1");
    assert_eq!(h.last().unwrap()["mod_revision"].as_i64(), Some(a));
    assert_eq!(r.len(), 3);
    assert!(r.iter().all(|x| x["gaps"].as_array().unwrap().is_empty()));
}

#[test]
fn compaction_between_runs_is_a_gap() {
    let etcd = TestEtcd::start();
    let (_dir, db) = temp_db();
    let key = "/registry/pods/ns/flappy";
    etcd.put(key, &pod("ns", "flappy", "u", "img:0"));
    ok(snapshot(&etcd, &db, &[]));
    let head1 = runs(&db)[0]["head_revision"].as_i64().unwrap();
    let revs: Vec<i64> = (1..=5)
        .map(|i| etcd.put(key, &pod("ns", "flappy", "u", &format!("img:{i}"))))
        .collect();
    assert_eq!(revs[0], head1 + 1);
    let compact_at = revs[2];
    etcd.compact(compact_at);
    ok(snapshot(&etcd, &db, &[]));
    let r = runs(&db);
    assert_eq!(r[1]["compact_revision"].as_i64(), Some(compact_at));
    assert_eq!(
        r[1]["gaps"],
        serde_json::json!([{"from_revision": head1 + 1, "to_revision": compact_at - 1}])
    );
    assert_eq!(r[1]["history_from"].as_i64(), Some(compact_at));
    let stored = mod_revisions(&db, key);
    let mut want = vec![head1];
    want.extend(&revs[2..]);
    assert_eq!(
        stored, want,
        "revisions before the compaction point are lost, the rest are stored"
    );
    // Compaction moving on between runs is no restore.
    let later = etcd.put(key, &pod("ns", "flappy", "u", "img:6"));
    etcd.compact(later);
    ok(snapshot(&etcd, &db, &[]));
    let r = runs(&db);
    assert_eq!(r.len(), 3);
    assert!(
        r.iter()
            .all(|x| x["status"] == "complete" && x.get("restored").is_none()),
        "{r:?}"
    );
    assert!(findings(&db, "restored").is_empty());
}

#[test]
fn first_run_on_a_compacted_etcd_starts_at_the_compaction_point() {
    let etcd = TestEtcd::start();
    let (_dir, db) = temp_db();
    let key = "/registry/pods/ns/p";
    let revs: Vec<i64> = (0..4)
        .map(|i| etcd.put(key, &pod("ns", "p", "u", &format!("img:{i}"))))
        .collect();
    etcd.delete("/registry/pods/ns/none");
    etcd.compact(revs[1]);
    ok(snapshot(&etcd, &db, &[]));
    let r = runs(&db);
    assert_eq!(
        (r[0]["compact_revision"].as_i64(), r[0]["history_from"].as_i64()),
        (Some(revs[1]), Some(revs[1]))
    );
    assert!(
        r[0]["gaps"].as_array().unwrap().is_empty(),
        "a first run has no earlier run to have a gap with"
    );
    let stored = mod_revisions(&db, key);
    assert_eq!(stored, revs[1..].to_vec());
}

#[test]
fn keyspace_larger_than_a_page_is_read_completely() {
    let etcd = TestEtcd::start();
    let (_dir, db) = temp_db();
    let items: Vec<(String, Vec<u8>)> = (0..3000)
        .map(|i| {
            (
                format!("/registry/pods/ns{}/pod-{i:05}", i % 7),
                pod(
                    &format!("ns{}", i % 7),
                    &format!("pod-{i:05}"),
                    &format!("u{i}"),
                    "img",
                ),
            )
        })
        .collect();
    etcd.put_many(&items);
    ok(snapshot(&etcd, &db, &["--page-size", "128"]));
    let r = runs(&db);
    assert_eq!(
        (r[0]["keys_seen"].as_i64(), r[0]["revisions_added"].as_i64()),
        (Some(3000), Some(3000))
    );
    assert_eq!(history(&db, "/registry/pods/ns3/pod-02999").len(), 1);
}

#[test]
fn unreachable_etcd_is_one_line_and_a_failed_run() {
    let (_dir, db) = temp_db();
    let endpoint = closed_endpoint();
    let out = inspector(
        &db,
        &["snapshot", "--endpoints", &endpoint, "--dial-timeout", "2s"],
    );
    let err = one_line_error(&out);
    assert!(
        err.contains(&format!("cannot connect to etcd at {endpoint}")),
        "{err}"
    );
    let r = runs(&db);
    assert_eq!(r[0]["status"].as_str(), Some("failed"));
    assert!(
        r[0]["error"].as_str().unwrap().contains("cannot connect"),
        "{:?}",
        r[0]
    );
}

/// A command line that cannot work exits 2 (as clap's own usage errors do)
/// before anything runs: no run recorded, no database made.
#[test]
fn usage_errors_exit_2_and_record_nothing() {
    let (_dir, db) = temp_db();
    let endpoint = closed_endpoint();
    for args in [
        &["snapshot", "--endpoints", &endpoint, "--cert", "client.crt"][..],
        &["snapshot", "--endpoints", &endpoint, "--key", "client.key"],
        &["snapshot", "--endpoints", &endpoint, "--user", "root"],
        &["follow", "--endpoints", &endpoint, "--user", "root"],
        &["diff"],
        &["diff", "--rev-a", "3"],
        &["attribute"],
        &["report", "--since", "garbage"],
        &["stats", "--until", "rev:x"],
        &["show", "cm/web", "--at", "yesterday-ish"],
    ] {
        let out = inspector(&db, args);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
        assert!(!stderr(&out).contains("panicked"), "{args:?}");
    }
    let out = inspector(&db, &["report", "--since", "garbage"]);
    assert!(
        stderr(&out).contains("\"garbage\" is not a time"),
        "{}",
        stderr(&out)
    );
    // Nothing was recorded (a SQLite database was never made).
    let listed = inspector(&db, &["runs", "-o", "json"]);
    let none = serde_json::from_slice::<serde_json::Value>(&listed.stdout)
        .is_ok_and(|runs| runs.as_array().is_some_and(Vec::is_empty));
    assert!(
        !listed.status.success() || none,
        "{}",
        String::from_utf8_lossy(&listed.stdout)
    );
}

#[test]
fn wrong_password_and_missing_permission() {
    let mut etcd = TestEtcd::start();
    etcd.put("/registry/pods/ns/p", &pod("ns", "p", "u", "img"));
    etcd.enable_auth("root-secret", "reader-secret");
    let (_dir, db) = temp_db();
    let err = one_line_error(&snapshot(&etcd, &db, &["--user", "root", "--password", "wrong"]));
    assert!(err.contains("authentication failed"), "{err}");
    assert!(!err.contains("wrong"), "the password is not echoed: {err}");
    let err = one_line_error(&snapshot(
        &etcd,
        &db,
        &["--user", "reader", "--password", "reader-secret"],
    ));
    assert!(err.contains("permission denied"), "{err}");
    ok(snapshot(
        &etcd,
        &db,
        &["--user", "root", "--password", "root-secret"],
    ));
    // etcdctl's form, NAME:PASSWORD, never echoed.
    ok(snapshot(&etcd, &db, &["--user", "root:root-secret"]));
    let err = one_line_error(&snapshot(&etcd, &db, &["--user", "root:wrong"]));
    assert!(
        err.contains("authentication failed") && !err.contains("wrong"),
        "{err}"
    );
    assert_eq!(
        run_statuses(&db),
        ["failed", "failed", "complete", "complete", "failed"]
    );
}

#[test]
fn tls_with_client_certificates() {
    let certs = tempfile::tempdir().unwrap();
    let tls = Tls::generate(certs.path());
    let etcd = TestEtcd::start_tls(&tls);
    etcd.put("/registry/pods/ns/p", &pod("ns", "p", "u", "img"));
    let (_dir, db) = temp_db();
    let s = |p: &Path| p.to_str().unwrap().to_string();
    let (ca, cert, key, other) = (
        s(&tls.ca),
        s(&tls.client_cert),
        s(&tls.client_key),
        s(&tls.other_ca),
    );

    let out = snapshot(&etcd, &db, &["--cacert", &ca, "--cert", &cert, "--key", &key]);
    ok(out);
    // Each way to get TLS wrong is named, with the fix.
    let http = etcd.endpoint.replace("https://", "http://");
    let wrong_key = s(&tls.server_key);
    for (args, says) in [
        (
            vec!["--cacert", &ca],
            "the server requires a client certificate: give --cert and --key",
        ),
        (
            vec!["--cacert", &other, "--cert", &cert, "--key", &key],
            "the server's certificate is not signed by the CA in --cacert",
        ),
        (
            vec!["--cert", &cert, "--key", &key],
            "not signed by a CA this system trusts: give --cacert",
        ),
        (
            vec!["--cacert", &ca, "--cert", &cert, "--key", &wrong_key],
            "is not the key of --cert",
        ),
    ] {
        let mut all = vec!["--dial-timeout", "3s"];
        all.extend(args);
        let err = one_line_error(&snapshot(&etcd, &db, &all));
        assert!(
            err.contains("cannot connect to etcd at ") && err.contains(says),
            "{says}: {err}"
        );
    }
    let out = inspector(&db, &["snapshot", "--endpoints", &http, "--dial-timeout", "3s"]);
    let err = one_line_error(&out);
    // Go's TLS server closes a plain connection, or answers it with "HTTP
    // request to an HTTPS server" when it reads the request first (under
    // load): either way the error says TLS is required.
    assert!(
        err.contains("requires TLS") && err.contains("use https://"),
        "{err}"
    );
    // Half an identity is a usage error: exit 2, no run recorded.
    let half = snapshot(&etcd, &db, &["--cacert", &ca, "--cert", &cert]);
    assert_exit(&half, 2);
    assert!(stderr(&half).contains("--key"), "{}", stderr(&half));
    assert_eq!(
        run_statuses(&db),
        ["complete", "failed", "failed", "failed", "failed", "failed"]
    );
}

/// A plain etcd reached with https://, a plain server that resets a TLS
/// hello, a port where something else answers, and one where nothing
/// listens: each named.
#[test]
fn connection_errors_say_what_answered() {
    let etcd = TestEtcd::start();
    let (_dir, db) = temp_db();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let not_etcd = format!("http://{}", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        use std::io::{Read, Write};
        for stream in listener.incoming() {
            let mut stream = stream.unwrap();
            let _ = stream.read(&mut [0u8; 1024]);
            let _ = stream.write_all(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n");
        }
    });
    // A plain server that resets a TLS hello rather than closing (etcd
    // 3.5.1 does so at times): it drops the connection with the hello
    // unread, which makes the kernel send a reset.
    let resetting = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let resets = format!("https://{}", resetting.local_addr().unwrap());
    std::thread::spawn(move || {
        use std::io::{Read, Write};
        for stream in resetting.incoming() {
            let mut stream = stream.unwrap();
            let mut first = [0u8; 1];
            if stream.read_exact(&mut first).is_ok() && first[0] != 0x16 {
                let _ = stream.read(&mut [0u8; 1024]);
                let _ = stream.write_all(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n");
            }
        }
    });
    let https = etcd.endpoint.replace("http://", "https://");
    let closed = closed_endpoint();
    for (endpoint, says) in [
        (https.as_str(), "the server does not speak TLS: use http://"),
        (resets.as_str(), "the server does not speak TLS: use http://"),
        (
            not_etcd.as_str(),
            "is not etcd's gRPC: an HTTP server that says \"HTTP/1.1 400 Bad Request\"",
        ),
        (closed.as_str(), "connection refused: nothing listens at"),
    ] {
        let out = inspector(
            &db,
            &["snapshot", "--endpoints", endpoint, "--dial-timeout", "3s"],
        );
        let err = one_line_error(&out);
        let at = format!("cannot connect to etcd at {endpoint}: ");
        assert!(err.contains(&at) && err.contains(says), "{err}");
    }
}

/// Starts a slow snapshot (many keys, tiny pages) and returns once it has
/// committed some revisions.
fn start_slow_snapshot(etcd: &TestEtcd, db: &Path) -> std::process::Child {
    let items: Vec<(String, Vec<u8>)> = (0..6000)
        .map(|i| {
            (
                format!("/registry/pods/ns/p{i:05}"),
                pod("ns", &format!("p{i:05}"), &format!("u{i}"), "img"),
            )
        })
        .collect();
    etcd.put_many(&items);
    let mut child = spawn_inspector(
        db,
        &[
            "snapshot",
            "--endpoints",
            &etcd.endpoint,
            "--fetch",
            "watch",
            "--page-size",
            "3",
        ],
    );
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while stored_revisions(db) == 0 {
        if std::time::Instant::now() > deadline {
            child.kill().unwrap();
            child.wait().unwrap();
            panic!("the snapshot never committed anything");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    child
}

#[test]
fn killed_run_leaves_a_consistent_database_and_is_not_complete() {
    let etcd = TestEtcd::start();
    let (_dir, db) = temp_db();
    let mut child = start_slow_snapshot(&etcd, &db);
    child.kill().unwrap();
    child.wait().unwrap();
    assert_consistent(&db);
    let r = runs(&db);
    assert_eq!(
        r[0]["status"].as_str(),
        Some("running"),
        "killed before it could finish: {:?}",
        r[0]
    );
    let partial = stored_revisions(&db);
    assert!(partial > 0 && partial < 6000, "{partial}");

    ok(snapshot(&etcd, &db, &[]));
    let r = runs(&db);
    assert_eq!(r[0]["status"].as_str(), Some("interrupted"));
    assert_eq!(
        r[0]["error"].as_str(),
        Some("the process ended before the run finished")
    );
    assert_eq!(r[1]["status"].as_str(), Some("complete"));
    assert_eq!(
        stored_revisions(&db),
        6000,
        "the next run completes the history, nothing twice"
    );
    assert_eq!(r[1]["revisions_added"].as_i64(), Some(6000 - partial));
}

#[test]
fn sigterm_marks_the_run_interrupted() {
    let etcd = TestEtcd::start();
    let (_dir, db) = temp_db();
    let child = start_slow_snapshot(&etcd, &db);
    let out = terminate(child);
    assert_exit(&out, 130);
    assert!(stderr(&out).contains("run 1 interrupted"), "{}", stderr(&out));
    assert_consistent(&db);
    let r = runs(&db);
    assert_eq!(r[0]["status"].as_str(), Some("interrupted"));
    assert_eq!(r[0]["revisions_added"].as_i64(), Some(stored_revisions(&db)));
}

/// A signal at any stage of a run, with either way of fetching, ends it
/// as interrupted (exit 130) with what it stored kept and counted; one
/// while it analyzes keeps the history it read, stored and complete, and
/// the next run goes on from it.
#[test]
fn a_signal_at_any_stage_interrupts_the_run() {
    let etcd = TestEtcd::start();
    for i in 0..20 {
        etcd.put(
            &format!("/registry/configmaps/shop/app.config-{i}"),
            &crate::util::k8s::config_map(
                "shop",
                &format!("app.config-{i}"),
                &format!("u{i}"),
                &[("app.properties", "a=1")],
            ),
        );
    }
    for (fetch, stages) in [
        ("watch", &["replay", "store", "check", "analyze"][..]),
        ("snapshot", &["download", "read", "store", "check", "analyze"]),
    ] {
        for stage in stages {
            let (_dir, db) = temp_db();
            let out = crate::util::snapshot_with_env(
                &etcd,
                &db,
                &[("ETCD_INSPECTOR_SIGNAL_AT", std::ffi::OsStr::new(stage))],
                &["--fetch", fetch],
            );
            let said = stderr(&out);
            assert_eq!(
                out.status.code(),
                Some(130),
                "--fetch {fetch}, a signal at {stage}: {said}"
            );
            assert_consistent(&db);
            let r = runs(&db);
            assert_eq!(
                r[0]["status"], "interrupted",
                "--fetch {fetch} at {stage}: {}",
                r[0]
            );
            assert_eq!(r[0]["revisions_added"].as_i64(), Some(stored_revisions(&db)));
            if *stage == "analyze" {
                assert_eq!(stored_revisions(&db), 20, "--fetch {fetch}");
                assert!(said.contains("interrupted while analyzing"), "{said}");
            } else {
                // Not checked, so not called complete.
                assert_eq!(
                    r[0]["error"], "interrupted by a signal",
                    "--fetch {fetch} at {stage}"
                );
                assert!(!said.contains("complete"), "--fetch {fetch} at {stage}: {said}");
            }
            ok(snapshot(&etcd, &db, &[]));
            assert_eq!(
                stored_revisions(&db),
                20,
                "--fetch {fetch} at {stage}: the next run completes it"
            );
        }
    }
}

#[test]
fn a_second_writer_fails_clearly() {
    let etcd = TestEtcd::start();
    let (_dir, db) = temp_db();
    let mut child = start_slow_snapshot(&etcd, &db);
    let err = one_line_error(&snapshot(&etcd, &db, &[]));
    // SQLite names its lock file; PostgreSQL the run that holds the cluster.
    assert!(
        err.contains("is being written by another etcd-inspector run")
            || err.contains("is being written for etcd cluster") && err.contains("by run 1 (pid"),
        "{err}"
    );
    child.kill().unwrap();
    child.wait().unwrap();
}

#[test]
fn secrets_get_a_keyed_hash_and_never_reach_the_database() {
    use sha2::Digest;
    let etcd = TestEtcd::start();
    let (_dir, db) = temp_db();
    let password = "correct-horse-battery-staple";
    let value = secret("shop", "db", "uid-s", password);
    etcd.put("/registry/secrets/shop/db", &value);
    etcd.put("/registry/pods/shop/p", &pod("shop", "p", "u", "img"));
    ok(snapshot(&etcd, &db, &[]));
    let h = history(&db, "/registry/secrets/shop/db");
    assert_eq!(
        (h[0]["value_hash"].as_str(), h[0]["kind"].as_str()),
        (Some("hmac-sha256"), Some("Secret"))
    );
    let plain: String = sha2::Sha256::digest(&value)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    assert_ne!(
        h[0]["value_sha256"].as_str(),
        Some(plain.as_str()),
        "no plain SHA-256 of a Secret"
    );
    assert_eq!(
        history(&db, "/registry/pods/shop/p")[0]["value_hash"].as_str(),
        Some("sha256")
    );
    assert_eq!(
        assert_secrets_nowhere(&db, &[password]),
        1,
        "the Secret's one revision is kept as a keyed hash, its content nowhere"
    );
}

#[test]
fn responses_larger_than_four_mib_are_read() {
    let etcd = TestEtcd::start();
    let (_dir, db) = temp_db();
    // Five ConfigMaps of 1.2 MiB each: one range page and the history replay
    // both carry about 6 MiB, over gRPC's default 4 MiB message limit.
    for i in 0..5 {
        let big = "x".repeat(1200 * 1024);
        let cm = serde_json::json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": format!("big-{i}"), "namespace": "ns", "uid": format!("u{i}")}, "data": {"blob": big}});
        etcd.put(
            &format!("/registry/configmaps/ns/big-{i}"),
            &etcd_inspector::decode::encode::encode_protobuf(&cm).unwrap(),
        );
    }
    ok(snapshot(&etcd, &db, &[]));
    let r = runs(&db);
    assert_eq!(
        (r[0]["keys_seen"].as_i64(), r[0]["revisions_added"].as_i64()),
        (Some(5), Some(5))
    );
    let h = history(&db, "/registry/configmaps/ns/big-4");
    assert!(h[0]["value_size"].as_i64().unwrap() > 1200 * 1024);
    assert_eq!(h[0]["kind"].as_str(), Some("ConfigMap"));
}
